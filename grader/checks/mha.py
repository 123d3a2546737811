"""Part 2 checks: MultiHeadAttention(args, is_causal=False) with forward(q, k, v) -> (B, T, dim)."""
from __future__ import annotations

import math

import torch

from grader import diagnosis, reference
from grader.checks import (Context, Outcome, attention_verdict, changed, check, dtype_handling_advice, failed,
                           failed_with_error, forbidden_api_gate, is_dtype_handling, loop_verdict, passed,
                           resource_failure, rules_gate)
from grader.checks.sdpa import (MODULE_TOLERANCE, TOLERANCE, compare_gradients, low_precision_passed, perturbed,
                                where_largest)
from grader.sandbox.requests import MhaInterfaceRequest, MhaRequest, Probe

ARGS = dict(dim=32, n_heads=4, dropout=0.0, max_seq_len=16)
# (B, T, dim, n_heads, max_seq_len): T = 1, T = max_seq_len, a width that is not a power of two,
# more heads than positions.
CONFIGS = [(2, 5, 32, 4, 16), (1, 1, 32, 4, 16), (2, 16, 32, 4, 16), (2, 7, 24, 3, 12), (3, 3, 64, 8, 8)]


def model_args(dim=32, n_heads=4, max_seq_len=16, dropout=0.0) -> dict:
    return dict(dim=dim, n_heads=n_heads, dropout=dropout, max_seq_len=max_seq_len)


def linear_weights(ctx: Context, dim: int, seed: int) -> dict:
    g = ctx.generator(seed)
    return {name: torch.randn(dim, dim, generator=g) / math.sqrt(dim) for name in ("wq", "wk", "wv", "wo")}


def inputs(ctx: Context, B: int, T: int, dim: int, seed: int, self_attention: bool = False, dtype=torch.float32):
    g = ctx.generator(seed)
    q = torch.randn(B, T, dim, generator=g).to(dtype)
    if self_attention:
        return {"q": q, "k": q, "v": q}
    return {"q": q, "k": torch.randn(B, T, dim, generator=g).to(dtype), "v": torch.randn(B, T, dim, generator=g).to(dtype)}


def out_tensor(result: dict) -> torch.Tensor | None:
    out = result.get("out", {})
    return out.get("value") if out.get("kind") == "tensor" else None


def run(ctx: Context, args: dict, calls: list[dict], is_causal, doing: tuple[str, str], **options) -> tuple[list, Outcome | None]:
    """Build the module and run the calls; the first error, wrong type or wrong shape fails."""
    answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=is_causal, calls=calls, **options))
    return checked_calls(ctx, args, calls, answer, doing)


def first_error(answer: dict) -> dict | None:
    """The error of building the module, else of its first failing call."""
    return answer.get("error") or next((r["error"] for r in answer.get("calls", []) if "error" in r), None)


def checked_calls(ctx: Context, args: dict, calls: list[dict], answer: dict,
                  doing: tuple[str, str]) -> tuple[list, Outcome | None]:
    """An mha probe's answer: its per-call results, or the first error, wrong type or wrong shape."""
    if "error" in answer:
        return [], failed_with_error(ctx, answer["error"], "构造 MultiHeadAttention", "building MultiHeadAttention",
                                     max_seq_len=args["max_seq_len"])
    for call, result in zip(calls, answer["calls"]):
        if "error" in result:
            return [], failed_with_error(ctx, result["error"], doing[0], doing[1], max_seq_len=args["max_seq_len"])
        out = result.get("out", {})
        expected = tuple(call["q"].shape)
        if out.get("kind") != "tensor":
            return [], failed(f"forward 应返回一个张量，实际返回了 {out.get('kind')}。",
                              f"forward should return one tensor, got {out.get('kind')}.", ["wrong-return"])
        if tuple(out["shape"]) != expected:
            return [], failed(f"输出形状应为 {expected}，实际为 {tuple(out['shape'])}。",
                              f"The output should have shape {expected}, got {tuple(out['shape'])}.", ["wrong-return"])
    return answer["calls"], None


def diagnose_numbers(actual: torch.Tensor, call: dict, weights: dict, n_heads: int, is_causal: bool, static: dict) -> list[str]:
    variants = {variant: reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal, variant)
                for variant in reference.MHA_VARIANTS if is_causal or not variant.startswith("mask")}
    found = diagnosis.matching_variant(actual, variants)
    if found is None:
        return []
    found = reference.MISTAKE_OF.get(found, found)
    return ["is-causal-typo"] if found == "mask-missing" and "is-causal-typo" in static else [found]


def compare(actual, call, weights, n_heads, is_causal, static, label: tuple[str, str]) -> Outcome | None:
    expected = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal)
    atol, rtol = MODULE_TOLERANCE[call["q"].dtype]
    if diagnosis.close(actual, expected, atol, rtol):
        return None
    error, index = where_largest(actual, expected)
    return failed(f"{label[0]}：输出与参考实现不符，最大误差 {error:.3g}（位置 {index}，容差 atol={atol:g}）。",
                  f"{label[1]}: the output differs from the reference, max error {error:.3g} at {index} (atol={atol:g}).",
                  diagnose_numbers(actual, call, weights, n_heads, is_causal, static))


# (B, T, dim, n_heads, max_seq_len, is_causal): both flags, and T = max_seq_len (no slicing needed)
EVIDENCE = [(2, 5, 32, 4, 16, True), (2, 5, 32, 4, 16, False), (2, 16, 32, 4, 16, True)]


@check("mha.computes_attention", part="mha", points=0, visibility="hidden", gate=True,
       title_zh="确实在计算注意力（输出随 q、k 变化，并混合各位置）",
       title_en="it computes attention (the output follows q and k and mixes positions)")
def computes_attention(ctx: Context) -> Outcome:
    evidence = []
    for seed, (B, T, dim, heads, max_len, is_causal) in enumerate(EVIDENCE, start=190):
        base = inputs(ctx, B, T, dim, seed)
        g = ctx.generator(seed + 100)
        calls = [base, dict(base, q=perturbed(base["q"], g)), dict(base, k=perturbed(base["k"], g)),
                 dict(base, v=perturbed(base["v"], g, 0)), dict(base, v=perturbed(base["v"], g, T - 1))]
        results, problem = run(ctx, model_args(dim, heads, max_len), calls, is_causal, ("运行 forward", "running forward"),
                               weights=linear_weights(ctx, dim, seed))
        label = f"B={B}, T={T}, dim={dim}, is_causal={is_causal}"
        if problem:
            evidence.append({"label": label, "ran": False, "problem": problem})
            if resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
            continue
        out, out_q, out_k, out_v0, out_vl = (out_tensor(r) for r in results)
        mixes = changed(out[:, 1:], out_v0[:, 1:]) or changed(out[:, :-1], out_vl[:, :-1])
        evidence.append({"label": label, "ran": True, "q": changed(out, out_q), "k": changed(out, out_k), "mixes": mixes})
    return attention_verdict(evidence)


@check("mha.interface", part="mha", points=1, visibility="public",
       title_zh="模块结构：wq/wk/wv/wo 无偏置线性层，两个 nn.Dropout",
       title_en="module layout: bias-free wq/wk/wv/wo, two nn.Dropout")
def interface(ctx: Context) -> Outcome:
    args = model_args(dropout=0.1)
    for is_causal in (True, False):
        answer = ctx.student.call(Probe.MHA_INTERFACE, MhaInterfaceRequest(args=args, is_causal=is_causal))
        if "error" in answer:
            return failed_with_error(ctx, answer["error"], f"构造 MultiHeadAttention(args, is_causal={is_causal})",
                                     f"building MultiHeadAttention(args, is_causal={is_causal})")
    layers = answer["layers"]
    for name in ("wq", "wk", "wv", "wo"):
        layer = layers[name]
        if layer["type"] != "Linear":
            return failed(f"self.{name} 应是 nn.Linear，实际是 {layer['type']}。",
                          f"self.{name} should be an nn.Linear, got {layer['type']}.")
        if (layer["in_features"], layer["out_features"]) != (args["dim"], args["dim"]) or layer["bias"]:
            return failed(f"self.{name} 应为 nn.Linear({args['dim']}, {args['dim']}, bias=False)，实际为 "
                          f"({layer['in_features']}, {layer['out_features']}, bias={layer['bias']})。",
                          f"self.{name} should be nn.Linear({args['dim']}, {args['dim']}, bias=False), got "
                          f"({layer['in_features']}, {layer['out_features']}, bias={layer['bias']}).")
    for name in ("attn_dropout", "resid_dropout"):
        layer = layers[name]
        if layer["type"] != "Dropout" or abs(layer.get("p", -1) - args["dropout"]) > 1e-12:
            return failed(f"self.{name} 应是 nn.Dropout(args.dropout)，实际是 {layer['type']}{layer.get('p', '')}。",
                          f"self.{name} should be nn.Dropout(args.dropout), got {layer['type']} {layer.get('p', '')}.",
                          ["dropout-lowercase"] if "dropout-lowercase" in ctx.static else [])
    if "MultiheadAttention" in answer["submodules"]:
        return failed("模块内部使用了 nn.MultiheadAttention。", "The module uses nn.MultiheadAttention inside.", ["forbidden-api"])
    return passed("wq/wk/wv/wo 与两个 dropout 都符合接口。", "wq/wk/wv/wo and both dropouts match the interface.")


@check("mha.shapes", part="mha", points=1, visibility="public",
       title_zh="各种长度、宽度与头数下输出形状正确", title_en="right output shape for every length, width and head count")
def shapes(ctx: Context) -> Outcome:
    for seed, (B, T, dim, heads, max_len) in enumerate(CONFIGS, start=100):
        for is_causal in (True, False):
            calls = [inputs(ctx, B, T, dim, seed)]
            results, problem = run(ctx, model_args(dim, heads, max_len), calls, is_causal,
                                   (f"运行 forward（B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal}）",
                                    f"running forward (B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal})"))
            if problem:
                return problem
            if not torch.isfinite(out_tensor(results[0])).all():  # which mistake: mha.values names it
                return failed(f"T={T}, is_causal={is_causal}：输出含 NaN 或 inf。",
                              f"T={T}, is_causal={is_causal}: the output has NaN or inf.")
    return passed("T=1、T=max_seq_len、dim 非 2 的幂、头数多于位置：形状都正确。",
                  "T = 1, T = max_seq_len, dim not a power of two, more heads than positions: all shapes right.")


@check("mha.causal_no_leak", part="mha", points=1, visibility="public",
       title_zh="因果模块：未来位置不影响过去的输出", title_en="causal module: the future does not change earlier outputs")
def causal_no_leak(ctx: Context) -> Outcome:
    B, T, dim, cut = 2, 7, 32, 3
    first = inputs(ctx, B, T, dim, 110)
    second = {name: x.clone() for name, x in first.items()}
    g = ctx.generator(111)
    for x in second.values():
        x[:, cut:] = torch.randn(x[:, cut:].shape, generator=g) * 3
    weights = linear_weights(ctx, dim, 112)
    results, problem = run(ctx, model_args(dim, 4, 16), [first, second], True,
                           ("运行因果 forward", "running the causal forward"), weights=weights)
    if problem:
        return problem
    a, b = out_tensor(results[0])[:, :cut], out_tensor(results[1])[:, :cut]
    if not torch.equal(a, b):
        change = float(torch.nan_to_num((a - b).abs(), nan=float("inf")).max())
        mistakes = diagnose_numbers(out_tensor(results[0]), first, weights, 4, True, ctx.static)
        if not mistakes:  # no known variant: is the mask applied at all?
            unmasked, _ = run(ctx, model_args(dim, 4, 16), [first], False, ("运行非因果 forward", "running forward"),
                              weights=weights)
            if unmasked and torch.equal(out_tensor(unmasked[0]), out_tensor(results[0])):
                mistakes = ["is-causal-typo"] if "is-causal-typo" in ctx.static else ["mask-missing"]
        return failed(f"只改变了位置 ≥{cut} 的输入，位置 <{cut} 的输出却变了（最大变化 {change:.3g}）：未来信息泄露。",
                      f"Only positions >= {cut} changed, yet outputs before {cut} changed (max {change:.3g}): the future leaks.",
                      mistakes)
    return passed("改变未来位置时，过去位置的输出逐位不变。", "Earlier outputs are bit-for-bit unchanged when the future changes.")


@check("mha.values", part="mha", points=2, visibility="hidden",
       title_zh="加载参考权重后数值与 float64 参考一致", title_en="with reference weights, values match a float64 reference")
def values(ctx: Context) -> Outcome:
    for seed, (B, T, dim, heads, max_len) in enumerate(CONFIGS[:1] + CONFIGS[3:], start=120):
        weights = linear_weights(ctx, dim, seed)
        for is_causal in (True, False):
            calls = [inputs(ctx, B, T, dim, seed + 50), inputs(ctx, B, T, dim, seed + 60, self_attention=True)]
            results, problem = run(ctx, model_args(dim, heads, max_len), calls, is_causal,
                                   ("运行 forward", "running forward"), weights=weights)
            if problem:
                return problem
            for call, result in zip(calls, results):
                problem = compare(out_tensor(result), call, weights, heads, is_causal, ctx.static,
                                  (f"B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal}",) * 2)
                if problem:
                    return problem
    return passed("因果与非因果、q/k/v 不同或相同：输出都与参考一致。",
                  "Causal and not, distinct or shared q/k/v: every output matches the reference.")


@check("mha.low_precision", part="mha", points=0.5, visibility="hidden",
       title_zh="float16 / bfloat16 下的模块", title_en="the module in float16 / bfloat16")
def low_precision(ctx: Context) -> Outcome:
    dim, heads = 32, 4
    notes = []
    for seed, dtype in enumerate((torch.float16, torch.bfloat16), start=125):
        name = str(dtype).replace("torch.", "")
        # the reference uses the same rounded weights and inputs, so only the student's arithmetic differs
        weights = {k: w.to(dtype) for k, w in linear_weights(ctx, dim, seed).items()}
        call = inputs(ctx, 2, 6, dim, seed + 1, dtype=dtype)
        args = model_args(dim, heads, 16)
        answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=True, calls=[call], weights=weights,
                                                        dtype=name))
        error = first_error(answer)
        advice = dtype_handling_advice(ctx, error, name) if error else None
        if advice:
            notes.append(advice)
            continue
        results, problem = checked_calls(ctx, args, [call], answer, (f"以 {name} 运行", f"running in {name}"))
        problem = problem or compare(out_tensor(results[0]), call, weights, heads, True, ctx.static, (name, name))
        if problem:
            return problem
    return low_precision_passed(notes)


@check("mha.mask_buffer", part="mha", points=1, visibility="hidden",
       title_zh="遮罩按 max_seq_len 构建、切片到当前长度，state_dict 往返不变",
       title_en="mask built for max_seq_len, sliced to the length, state_dict round trip")
def mask_buffer(ctx: Context) -> Outcome:
    dim, heads, max_len = 32, 4, 10
    weights = linear_weights(ctx, dim, 130)
    calls = [inputs(ctx, 1, T, dim, 131 + T) for T in range(1, max_len + 1)]
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
    dim, heads = 32, 4
    weights = linear_weights(ctx, dim, 150)
    x = inputs(ctx, 2, 6, dim, 151, self_attention=True)
    doing = ("以 dropout=0.5 运行 forward", "running forward with dropout=0.5")
    plain, problem = run(ctx, model_args(dim, heads, 16, dropout=0.0), [dict(x, mode="eval")], True, doing, weights=weights)
    if problem:
        return problem
    calls = [dict(x, mode="eval", seed=1), dict(x, mode="eval", seed=2)]
    results, problem = run(ctx, model_args(dim, heads, 16, dropout=0.5), calls, True, doing, weights=weights)
    if problem:
        return problem
    eval_1, eval_2 = (out_tensor(r) for r in results)
    if not (diagnosis.close(eval_1, eval_2, 0, 0) and diagnosis.close(eval_1, out_tensor(plain[0]), 1e-6, 1e-6)):
        return failed("eval() 模式下 dropout=0.5 的输出仍然随机，或与 dropout=0 时不同：dropout 在评估时仍然生效。",
                      "In eval() mode the output with dropout=0.5 is random or differs from dropout=0: dropout is active "
                      "in evaluation.", ["dropout-in-eval"])
    for layer, other in (("attn_dropout", "resid_dropout"), ("resid_dropout", "attn_dropout")):
        # only this layer drops: its own effect must show in train()
        calls = [dict(x, mode="train", seed=3), dict(x, mode="train", seed=4)]
        results, problem = run(ctx, model_args(dim, heads, 16, dropout=0.5), calls, True, doing, weights=weights,
                               dropout_p={layer: 0.5, other: 0.0})
        if problem:
            return problem
        train_1, train_2 = (out_tensor(r) for r in results)
        if torch.equal(train_1, train_2):
            return failed(f"train() 模式下只让 self.{layer} 丢弃时，两次前向结果完全相同：self.{layer} 没有被使用。",
                          f"In train() mode with only self.{layer} dropping, two forward passes are identical: "
                          f"self.{layer} is never applied.", ["dropout-not-applied"])
    return passed("train() 时两处 dropout 都生效，eval() 时输出确定且与 dropout=0 相同。",
                  "Both dropouts act in train(); in eval() the output is deterministic and equals dropout=0.")


@check("mha.gradients", part="mha", points=1, visibility="hidden",
       title_zh="梯度流到输入和四个投影层且数值正确", title_en="gradients reach the inputs and all four projections, and are right")
def gradients(ctx: Context) -> Outcome:
    dim, heads, T = 12, 3, 5
    weights = {k: v.double() for k, v in linear_weights(ctx, dim, 160).items()}
    call = inputs(ctx, 2, T, dim, 161, dtype=torch.float64)
    cotangent = torch.randn(2, T, dim, generator=ctx.generator(162), dtype=torch.float64)
    doing = ("反向传播", "back-propagating")
    args = model_args(dim, heads, 8)
    answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=True, calls=[call], weights=weights,
                                                    dtype="float64", grad=True, cotangent=cotangent))
    results, problem = checked_calls(ctx, args, [call], answer, doing)
    tolerance = (1e-5, 1e-4)
    if problem and is_dtype_handling(first_error(answer)):
        # float64 is the grader's choice: a module written for float32 is checked in float32
        weights = {k: w.float() for k, w in weights.items()}
        call, cotangent = {k: x.float() for k, x in call.items()}, cotangent.float()
        results, problem = run(ctx, args, [call], True, doing, weights=weights, grad=True, cotangent=cotangent)
        tolerance = (1e-4, 1e-3)
    if problem:
        return problem
    result = results[0]
    leaves = {name: x.clone().requires_grad_(True) for name, x in call.items()}
    params = {name: w.clone().requires_grad_(True) for name, w in weights.items()}
    out = reference.multi_head_attention(leaves["q"], leaves["k"], leaves["v"], params, heads, True)
    wanted = torch.autograd.grad(out, list(leaves.values()) + list(params.values()), cotangent.to(out.dtype))
    actual = (result.get("grads") or [None] * 3) + [(result.get("param_grads") or {}).get(n) for n in params]
    problem = compare_gradients(["q", "k", "v", "wq", "wk", "wv", "wo"], actual, wanted, tolerance)
    if problem:
        return problem
    return passed("q、k、v 与 wq/wk/wv/wo 的梯度都与参考一致。", "Gradients for q, k, v and wq/wk/wv/wo match the reference.")


@check("mha.device", part="mha", points=1, visibility="hidden",
       title_zh="model.to(device) 后在该设备上运行（遮罩随模块移动）",
       title_en="after model.to(device) it runs there (the mask moves with the module)")
def device(ctx: Context) -> Outcome:
    dim, heads = 32, 4
    weights = linear_weights(ctx, dim, 170)
    for is_causal in (True, False):  # devices only matter once it is right on the CPU
        call = inputs(ctx, 2, 6, dim, 171)
        results, problem = run(ctx, model_args(dim, heads, 16), [call], is_causal,
                               ("在 CPU 上运行 forward", "running forward on the CPU"), weights=weights)
        problem = problem or compare(out_tensor(results[0]), call, weights, heads, is_causal, ctx.static, ("CPU", "CPU"))
        if problem:
            return problem
    notes_zh, notes_en = [], []
    for where in (["cuda"] if ctx.cuda else []) + ["meta"]:
        for is_causal in (True, False):
            call = inputs(ctx, 2, 6, dim, 171)
            answer = ctx.student.call(Probe.MHA, MhaRequest(args=model_args(dim, heads, 16), is_causal=is_causal,
                                                            calls=[call], weights=weights, device=where))
            error = answer.get("error") or answer["calls"][0].get("error")
            if error and diagnosis.is_device_mismatch(error, ctx.static):
                interface = ctx.student.call(Probe.MHA_INTERFACE,
                                             MhaInterfaceRequest(args=model_args(dim, heads, 16), is_causal=is_causal))
                mistake = diagnosis.device_mistake(ctx.static, interface.get("plain_tensor_attributes", []))
                return failed_with_error(ctx, error, f"model.to('{where}') 后运行 forward（is_causal={is_causal}）",
                                         f"running forward after model.to('{where}') (is_causal={is_causal})", extra=(mistake,))
            if error:
                notes_zh.append(f"{where} 上无定论（{error['type']}）")
                notes_en.append(f"inconclusive on {where} ({error['type']})")
                continue
            out = answer["calls"][0]["out"]
            if out.get("device") != where:
                return failed(f"模块在 {where} 上，输出却在 {out.get('device')} 上。",
                              f"The module is on {where}, but the output is on {out.get('device')}.", ["hardcoded-device"])
            if where == "cuda":
                problem = compare(out.get("value"), call, weights, heads, is_causal, ctx.static, ("CUDA", "CUDA"))
                if problem:
                    return problem
    return passed("；".join(notes_zh) or "模块移动设备后，遮罩与计算都跟随。", "; ".join(notes_en) or "The mask and the work follow the module's device.")


@check("mha.vectorized", part="mha", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐位置的 Python 循环", title_en="no Python loop over heads or positions")
def vectorized(ctx: Context) -> Outcome:
    counts = {}
    # batch stays fixed: nn.Linear itself dispatches differently for B = 1
    for seed, (B, T, heads) in enumerate(((2, 4, 2), (2, 4, 8), (2, 16, 2)), start=180):
        call = inputs(ctx, B, T, 16, seed)
        weights = linear_weights(ctx, 16, seed)
        results, problem = run(ctx, model_args(16, heads, 16), [call, call], True, ("统计算子", "counting ops"),
                               count_ops=True, weights=weights)
        # only a right answer earns the vectorisation point
        problem = problem or compare(out_tensor(results[1]), call, weights, heads, True, ctx.static,
                                     (f"B={B}, H={heads}, T={T}",) * 2)
        if problem:
            return problem
        counts[f"H={heads},T={T}"] = results[1]["ops"]
    return loop_verdict(counts, "H=2,T=4")


@check("mha.own_implementation", part="mha", points=0, visibility="hidden", gate=True,
       title_zh="自己实现注意力（不用 nn.MultiheadAttention / F.scaled_dot_product_attention）",
       title_en="attention implemented by hand (no nn.MultiheadAttention / F.scaled_dot_product_attention)")
def own_implementation(ctx: Context) -> Outcome:
    return forbidden_api_gate(ctx, "mha")


@check("mha.rules", part="mha", points=0, visibility="hidden", gate=True,
       title_zh="遵守评分规则（不篡改环境、不用私有接口）",
       title_en="keeps to the grading rules (no tampering, no private interfaces)")
def rules(ctx: Context) -> Outcome:
    return rules_gate(ctx, "mha")
