"""Part 2, the module's state: precision, the mask buffer across lengths and a state_dict round
trip, dropout in train() and eval()."""
from __future__ import annotations

import torch

from grader.checks import diagnosis, reference
from grader.exercises.attention import DROPOUTS, PROJECTIONS
from grader.checks import Context, Outcome, check, failed, passed
from grader.checks.common import changed, needs_correct_values
from grader.checks.dtypes import (UNPROMISED_DTYPES, changed_dtype_failure, dtype_handling_advice, low_precision_passed,
                                  promoted_dtype_note, unpromised_dtype_note)
from grader.checks.mha.dropout_patterns import LAYER_PATTERNS, both_layers_dropped, both_runs, dropout_pattern
from grader.checks.mha.probing import (checked_calls, compare, first_error, in_regimes, inputs, linear_weights,
                                       model_args, out_tensor, run)
from grader.sandbox.requests import MhaRequest, Probe


@check("mha.low_precision", part="mha", points=0.5, visibility="hidden",
       title_zh="float16 / bfloat16 下的模块", title_en="the module in float16 / bfloat16")
def low_precision(ctx: Context) -> Outcome:
    return needs_correct_values(ctx, "mha", _low_precision(ctx), own=("mask-value-overflow",))


def _low_precision(ctx: Context) -> Outcome:
    dim, heads = 32, 4
    notes = []
    for seed, dtype in enumerate((torch.float16, torch.bfloat16), start=125):
        name = str(dtype).replace("torch.", "")
        # the reference uses the same rounded weights and inputs, so only the student's arithmetic differs
        weights = {k: w.to(dtype) for k, w in linear_weights(ctx, dim, seed).items()}
        call = inputs(ctx, 2, 6, dim, seed + 1, dtype=dtype)
        args = model_args(dim, heads, 16)
        # float16, which is graded, in both regimes and on one tensor handed as q, k and v (a path taken for
        # self-attention alone meets it); bfloat16, which only advises, once
        calls = in_regimes(ctx, f"mha.low_precision {name}",
                           [call, call, inputs(ctx, 2, 6, dim, 147, self_attention=True, dtype=dtype)]
                           if dtype == torch.float16 else [call])
        answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=True, calls=calls, weights=weights,
                                                        dtype=name))
        error = first_error(answer)
        advice = dtype_handling_advice(ctx, error, name, "mha") if error else None
        if failure := changed_dtype_failure(dtype, advice):  # float16 is graded: a changed dtype costs the check
            return failure
        if advice:
            notes.append(advice)
            continue
        results, problem = checked_calls(ctx, args, calls, answer, (f"以 {name} 运行", f"running in {name}"))
        problem = problem or next(filter(None, (compare(out_tensor(result), asked, weights, heads, True, ctx.static,
                                                        (name, name)) for asked, result in zip(calls, results))), None)
        promoted = None if problem else promoted_dtype_note(ctx, "mha", dtype, {"out": out_tensor(results[0])})
        if failure := changed_dtype_failure(dtype, promoted):  # float16 is graded: a changed dtype costs the check
            return failure
        if promoted:
            notes.append(promoted)
        if problem and dtype in UNPROMISED_DTYPES:
            notes.append(unpromised_dtype_note(ctx, name, error, problem))
        elif problem:
            return problem
    return low_precision_passed(notes)


@check("mha.mask_buffer", part="mha", points=1, visibility="hidden",
       title_zh="掩码按 max_seq_len 构建、切片到当前长度，state_dict 往返不变",
       title_en="mask built for max_seq_len, sliced to the length, state_dict round trip")
def mask_buffer(ctx: Context) -> Outcome:
    # errors (a mask not sliced, a state_dict that does not load) are this check's own evidence;
    # numbers that differ at every length are the values check's finding
    return needs_correct_values(ctx, "mha", _mask_buffer(ctx), own=("mask-not-sliced", "mask-not-buffer"))


def _mask_buffer(ctx: Context) -> Outcome:
    dim, heads, max_len = 32, 4, 10
    weights = linear_weights(ctx, dim, 130)
    # every length, then the longest on one tensor handed as q, k and v (a path taken for self-attention alone meets it)
    calls = in_regimes(ctx, "mha.mask_buffer", [*(inputs(ctx, 1, T, dim, 131 + T) for T in range(1, max_len + 1)),
                                                inputs(ctx, 1, max_len, dim, 145, self_attention=True)])
    results, problem = run(ctx, model_args(dim, heads, max_len), calls, True,
                           ("在 state_dict 往返后对每个长度 T ≤ max_seq_len 运行 forward",
                            "running forward for every length T <= max_seq_len after a state_dict round trip"),
                           weights=weights, roundtrip=True)
    if problem:
        return problem
    for call, result in zip(calls, results):
        T = call["q"].shape[1]
        problem = compare(out_tensor(result), call, weights, heads, True, ctx.static,
                          (f"state_dict 往返后 T={T}", f"after a state_dict round trip, T={T}"))
        if problem:
            return problem
    too_long = ctx.student.call(Probe.MHA, MhaRequest(args=model_args(dim, heads, max_len), is_causal=True,
                                                      calls=[inputs(ctx, 1, max_len + 1, dim, 140)], weights=weights))
    error = (too_long.get("calls") or [{}])[0].get("error") or too_long.get("error")
    note_zh = (f"（T > max_seq_len 时你的模块报错：{error['type']}，这是可以接受的。）" if error
               else "（T > max_seq_len 时你的模块没有报错；请确认这是你想要的行为。）")
    note_en = (f" (For T > max_seq_len your module raises {error['type']}, which is fine.)" if error
               else " (For T > max_seq_len your module raises nothing; make sure that is intended.)")
    return passed("每个长度 1…max_seq_len 都正确，state_dict 往返后结果不变。" + note_zh,
                  "Every length 1..max_seq_len is right, also after a state_dict round trip." + note_en)


@check("mha.dropout", part="mha", points=1, visibility="hidden",
       title_zh="dropout：train() 时两处都生效，eval() 时不生效", title_en="dropout: both active in train(), none in eval()")
def dropout(ctx: Context) -> Outcome:
    # sizes drawn per grading, written nowhere, so no code drops only at the grader's shapes
    B, T, dim, heads, max_len = dropout_sizes(ctx)
    weights = linear_weights(ctx, dim, 150)
    x = inputs(ctx, B, T, dim, 151, self_attention=True)
    doing = ("以 dropout=0.5 运行 forward", "running forward with dropout=0.5")
    # without any dropout: eval() twice and train() once, each under another seed, must be one and the same output
    # train() in training, as real training runs it; eval() in both regimes (checks.regimes)
    calls = [*in_regimes(ctx, "mha.dropout eval", [dict(x, mode="eval", seed=ctx.seed(n)) for n in (1, 2)]),
             dict(x, mode="train", seed=ctx.seed(3), regime="training")]
    plain, problem = run(ctx, model_args(dim, heads, max_len, dropout=0.0), calls, True, doing, weights=weights)
    if problem:
        return problem
    plain_eval, other_eval, plain_train = (out_tensor(r) for r in plain)
    if not diagnosis.close(plain_eval, other_eval, 0, 0):
        rate, problem = _rate_of_dropout_in_eval(ctx, B, dim, heads, max_len, doing)
        if problem or rate is not None:
            return problem or failed(
                f"dropout=0 且在 eval() 模式下输出仍然随机，而且是 dropout 的样子：部分值被置 0，其余放大为 1/(1-p) 倍"
                f"（p ≈ {rate:.2f}）。有一处 dropout 用了写死的概率或 training=True，评估时也在丢弃。",
                f"With dropout=0 in eval() mode the output is still random, in dropout's pattern: some values dropped to "
                f"0, the rest scaled by 1/(1-p) (p ≈ {rate:.2f}). A dropout with a hard-coded rate or training=True "
                f"still drops in evaluation.", ["dropout-in-eval"])
        layers = ctx.static.get("layers-in-forward")
        return failed("dropout=0 且在 eval() 模式下，同样的输入两次前向的结果却不同：输出的随机性不是 dropout 造成的"
                      + ("（forward 里每次新建了带随机权重的层）。" if layers else "。"),
                      "With dropout=0 in eval() mode, two forward passes of the same input differ: the randomness is "
                      "not dropout's" + (" (forward builds a layer with fresh random weights on every call)." if layers
                                         else "."), ["layers-in-forward"] if layers else [])
    if not diagnosis.close(plain_train, plain_eval, 1e-6, 1e-6):
        return failed("args.dropout=0 时 train() 的输出仍然随机，与 eval() 不同：某处的 dropout 概率没有用 args.dropout。",
                      "With args.dropout = 0 the train() output is still random and differs from eval(): some dropout "
                      "rate does not come from args.dropout.", ["dropout-hardcoded"])
    calls = in_regimes(ctx, "mha.dropout eval 0.5", [dict(x, mode="eval", seed=ctx.seed(n)) for n in (1, 2)])
    results, problem = run(ctx, model_args(dim, heads, max_len, dropout=0.5), calls, True, doing, weights=weights)
    if problem:
        return problem
    eval_1, eval_2 = (out_tensor(r) for r in results)
    if not (diagnosis.close(eval_1, eval_2, 0, 0) and diagnosis.close(eval_1, plain_eval, 1e-6, 1e-6)):
        return failed("eval() 模式下 dropout=0.5 的输出仍然随机，或与 dropout=0 时不同：dropout 在评估时仍然生效。",
                      "In eval() mode the output with dropout=0.5 is random or differs from dropout=0: dropout is active "
                      "in evaluation.", ["dropout-in-eval"])
    trained = {}
    for layer, other in (DROPOUTS, DROPOUTS[::-1]):
        # only this layer drops: its own effect must show in train()
        calls = [dict(x, mode="train", seed=ctx.seed(n), regime="training") for n in (3, 4)]
        results, problem = run(ctx, model_args(dim, heads, max_len, dropout=0.5), calls, True, doing, weights=weights,
                               dropout_p={layer: 0.5, other: 0.0})
        if problem:
            return problem
        train_1, train_2 = (out_tensor(r) for r in results)
        if layer == DROPOUTS[0] and bool(torch.isfinite(plain_eval).all()) and not bool(torch.isfinite(train_1).all()):
            return failed(*NAN_FROM_DROPPED_SCORES, ["attn-dropout-placement"])
        # whether the layer is called is a fact of the code: judged on the values that are finite, NaN elsewhere or not
        if bool(torch.isfinite(train_1).any()) and not changed(train_1, train_2):
            return failed(f"train() 模式下只让 self.{layer} 丢弃时，两次前向结果完全相同：self.{layer} 没有被使用。",
                          f"In train() mode with only self.{layer} dropping, two forward passes are identical: "
                          f"self.{layer} is never applied.", ["dropout-not-applied"])
        if not (bool(torch.isfinite(train_1).all()) and bool(torch.isfinite(train_2).all())):
            return failed(f"train() 模式下只让 self.{layer} 丢弃时输出出现 NaN 或 inf。",
                          f"In train() mode with only self.{layer} dropping, the output holds NaN or inf.")
        trained[layer] = train_1
    misplaced = _misplaced_attention_dropout(trained[DROPOUTS[0]], x, weights, heads, seed=ctx.seed(3))
    if misplaced:
        return failed(*misplaced, ["attn-dropout-placement"])
    unread = False
    for layer in DROPOUTS:  # read from the very runs above: no probe of its own, so nothing tells the reading apart
        problem = _own_pattern(layer, trained[layer], plain_eval, x, weights, heads, ctx.seed(3))
        if problem and _read_through_the_reference(ctx, layer, problem):
            unread = True  # whether the layer is called stays a fact of the code, judged above
        elif problem:
            return needs_correct_values(ctx, "mha", problem)
    problem = None if unread else _both_layers(ctx, (B, T, dim, heads, max_len), weights, doing)
    if problem:
        return needs_correct_values(ctx, "mha", problem)
    why_zh, why_en = ("（数值不对，self.attn_dropout 在注意力权重上的样子无法对照参考实现读出，见 mha.values）",
                      " (the values are wrong, so self.attn_dropout's pattern on the attention weights, read through "
                      "the reference, was not read: see mha.values)") if unread else ("", "")
    return passed(f"train() 时两处 dropout 都生效，eval() 时输出确定且与 dropout=0 相同{why_zh}。",
                  f"Both dropouts act in train(); in eval() the output is deterministic and equals dropout=0{why_en}.")


def _both_layers(ctx: Context, sizes: tuple, weights: dict, doing) -> Outcome | None:
    """Both layers at args.dropout, as the model really trains: runs each on its own inputs under one seed (one pair
    of masks) must show both patterns (dropout_patterns.both_layers_dropped), so code that drops only where the two
    rates differ, as the one-layer runs above set them, is seen not to drop in training."""
    B, T, dim, heads, max_len = sizes
    calls = [dict(inputs(ctx, B, T, dim, 170 + n, self_attention=True), mode="train", seed=ctx.seed(7),
                  regime="training") for n in range(both_runs(T, dim // heads))]
    args = model_args(dim, heads, max_len, dropout=0.5)
    answers = ctx.student.call_many(Probe.MHA, [MhaRequest(args=args, is_causal=True, calls=[call], weights=weights)
                                                for call in calls])
    outs = []
    for call, answer in zip(calls, answers):
        results, problem = checked_calls(ctx, args, [call], answer, doing)
        if problem:
            return problem
        outs.append(out_tensor(results[0]))
    if both_layers_dropped(outs, calls, weights, heads, 0.5):
        return None
    outcome = failed("train() 模式下两个 dropout 都取 args.dropout（p=0.5，模型真正训练时的设置）时，输出里看不到两处 dropout "
                     "的样子（softmax 之后的权重和 wo 之后的输出，各自部分置 0、其余放大为 2 倍）：有一处 dropout 只在某些设置下"
                     "（例如两个概率不同时）才生效。每个 dropout 都应在 train() 时按自己的概率丢弃。",
                     "In train() mode with both dropouts at args.dropout (p = 0.5, as the model really trains), the output "
                     "does not show both dropouts' patterns (the weights after softmax and the output after wo, each "
                     "partly zeroed and the rest doubled): a dropout acts only under some settings (when the two rates "
                     "differ, say). Each dropout should drop at its own rate whenever the module is in train().",
                     ["dropout-not-applied"])
    outcome.cause = "values"  # read through the module's weights, as the one-layer patterns are
    return outcome


def _read_through_the_reference(ctx: Context, layer: str, problem: Outcome) -> bool:
    """attn_dropout's pattern on the attention weights is read through the reference's weights: a module whose values
    are wrong cannot show it, though it calls the layer (its output changed between two train() runs above)."""
    values = ctx.outcomes.get("mha.values")
    return layer == DROPOUTS[0] and values is not None and not values.passed \
        and problem.mistakes == ["dropout-not-applied"]


def dropout_sizes(ctx: Context) -> tuple[int, int, int, int, int]:
    """B, T, dim, n_heads, max_seq_len of every probe the dropout check runs, drawn per grading: T from 5 to 8
    positions (never as many as the 2 to 4 heads; at most 8, so the 2^T ways to keep a row's attention weights stay
    few), head_dim from 2 to 5, a max_seq_len past T. Each layer's own pattern is read from the train() runs that see
    the output change, so no shape, weight or input tells the reading apart from them."""
    B, T, heads, head_dim, room = ctx.sizes("mha.dropout", range(2, 5), range(5, 9), range(2, 5), range(2, 6), range(1, 9))
    return B, T, heads * head_dim, heads, T + room


def _own_pattern(layer: str, out: torch.Tensor, plain: torch.Tensor, x: dict, weights: dict, heads: int,
                 seed: int) -> Outcome | None:
    """With only `layer` dropping (p = 0.5), the train() output `out` (drawn from `seed`) must show that layer's own
    pattern where it belongs, against the code's own eval() output `plain` on the same weights and inputs: output that
    is merely random (noise added in train()) is no dropout."""
    seen = dropout_pattern(out, plain, x, weights, heads, 0.5, seed)
    if seen in LAYER_PATTERNS[layer]:
        return None
    where_zh, where_en = (("softmax 之后的注意力权重", "the attention weights after softmax") if layer == DROPOUTS[0]
                          else ("wo 之后的输出", "the output after wo"))
    if seen is None:
        outcome = failed(f"train() 模式下只让 self.{layer} 丢弃（p=0.5）时，输出里看不到它在{where_zh}上的样子（部分值置 0、"
                         f"其余放大为 2 倍）：输出只是随机，并没有经过 self.{layer}。",
                         f"In train() mode with only self.{layer} dropping (p = 0.5), the output does not show its pattern "
                         f"on {where_en} (some values zeroed, the rest doubled): the output is random, but it never went "
                         f"through self.{layer}.", ["dropout-not-applied"])
    else:
        outcome = failed(f"train() 模式下只让 self.{layer} 丢弃时，它作用的地方不是{where_zh}。",
                         f"In train() mode with only self.{layer} dropping, it acts somewhere other than {where_en}.",
                         ["attn-dropout-placement"])
    outcome.cause = "values"  # read through the module's weights: where mha.values already failed, that says why
    return outcome


def _rate_of_dropout_in_eval(ctx: Context, B: int, dim: int, heads: int, max_len: int,
                             doing) -> tuple[float | None, Outcome | None]:
    """The rate p of a dropout that drops in eval(), told by its pattern, else None. With wq = wk = 0 every
    visible key gets the same weight, and with wv = wo = I and inputs of ones every output is exactly 1: a
    dropout leaves each value at 0 or at 1/(1-p) (the first position, which sees only itself, shows it
    whichever tensor drops), where a layer with fresh random weights leaves values of every size."""
    ones = torch.ones(B, 4, dim)
    identity, zero = torch.eye(dim), torch.zeros(dim, dim)
    weights = {name: identity if name in ("wv", "wo") else zero for name in PROJECTIONS}
    calls = in_regimes(ctx, "mha.dropout rate", [dict(q=ones, k=ones, v=ones, mode="eval", seed=ctx.seed(label))
                                                 for label in (5, 6)])
    results, problem = run(ctx, model_args(dim, heads, max_len, dropout=0.0), calls, True, doing, weights=weights)
    if problem:
        return None, problem
    first = torch.cat([out_tensor(r)[:, 0].flatten() for r in results])
    kept = first[first.abs() > 1e-6]
    if not bool(torch.isfinite(first).all()) or kept.numel() == 0:
        return None, None
    scale = float(kept[0])
    if scale <= 1 + 1e-4 or not torch.allclose(kept, torch.full_like(kept, scale), rtol=1e-5, atol=0):
        return None, None
    return 1 - 1 / scale, None


NAN_FROM_DROPPED_SCORES = (
    f"train() 模式下只让 self.{DROPOUTS[0]} 丢弃时输出出现 NaN：dropout 作用在了已填 −inf 的分数上（0 × −inf）。",
    f"In train() mode with only self.{DROPOUTS[0]} dropping, the output has NaN: the dropout multiplies scores "
    f"already filled with −inf (0 × −inf).")


PLACES = {"scores": ("softmax 之前的分数（scores）", "the scores (before softmax)"),
          "heads": ("注意力的输出（weights @ V）", "the heads' outputs (weights @ V)"),
          "output": ("wo 之后的模块输出（那是 resid_dropout 的位置：两个 dropout 用反了）",
                     "the module's output after wo (resid_dropout's place: the two dropouts are swapped)")}


def _misplaced_attention_dropout(out, x: dict, weights: dict, heads: int, seed: int) -> tuple[str, str] | None:
    """Where self.attn_dropout was applied, if not to the weights: a train() output that a wrong place reproduces
    exactly and the right one does not. Code that draws its random numbers another way matches no place and is
    never judged here."""
    layer = DROPOUTS[0]
    outputs = reference.attention_dropout_placements(x["q"], x["k"], x["v"], weights, heads, 0.5, seed)
    if diagnosis.close(out, outputs["weights"], 1e-4, 1e-4):
        return None
    place = next((place for place in PLACES if diagnosis.close(out, outputs[place], 1e-4, 1e-4)), None)
    if place is None:
        return None
    return (f"train() 模式下的输出正是把 self.{layer} 用在{PLACES[place][0]}上得到的，而它应该用在 softmax 之后的权重上。",
            f"The train() output is exactly what you get with self.{layer} applied to {PLACES[place][1]}; it "
            f"belongs on the weights after softmax.")
