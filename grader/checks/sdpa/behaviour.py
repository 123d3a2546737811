"""Part 1, what it computes: attention at all, the shapes it promises, the causal mask, the values."""
from __future__ import annotations

import dataclasses

import torch

from grader.checks import reference, Context, Outcome, check, failed, passed
from grader.checks.common import changed, named_variant, perturbed, resource_failure
from grader.checks.regimes import combinations, regimes
from grader.checks.gates import attention_verdict, nan_mistakes
from grader.checks.sdpa.probing import (accepted_shape, call, calls, compare, diagnose_numbers, probe_shapes, qkv,
                                        shape_inputs, tensor, with_figure)

# A future weight below this comes from a finite mask fill (exp(-100) = 4e-44), not a missing mask: its output is
# within every value tolerance, only the exactness of the zeros shows it.
TINY_WEIGHT = 1e-6
# (batch dims, T, d_k, d_v, is_causal): the default, and non-causal, which the shape check also calls
EVIDENCE = [((2, 3), 5, 8, 8, None), ((2, 3), 5, 8, 8, False), ((1, 2), 9, 16, 16, None)]


@check("sdpa.computes_attention", part="sdpa", points=0, visibility="hidden", gate=True,
       title_zh="确实在计算注意力（权重随 Q、K 变化，输出混合各位置）",
       title_en="it computes attention (weights follow Q and K, outputs mix positions)")
def computes_attention(ctx: Context) -> Outcome:
    evidence = attention_evidence(ctx, EVIDENCE)
    shape = None if any(e["ran"] or resource_failure(e["problem"]) for e in evidence) else accepted_shape(ctx)
    if shape is not None:  # code written for another rank still shows whether it computes attention
        evidence = attention_evidence(ctx, [(*shape, None)]) + evidence
    return attention_verdict(evidence, nan_mistakes(ctx))


def attention_evidence(ctx: Context, cases: list) -> list[dict]:
    evidence = []
    chosen = regimes(ctx, f"sdpa.computes_attention {len(cases)}", [None] * len(cases))
    for seed, ((batch, T, d_k, d_v, is_causal), regime) in enumerate(zip(cases, chosen), start=90):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed)
        g = ctx.generator(seed + 100)
        variants = [(Q, K, V), (perturbed(Q, g), K, V), (Q, perturbed(K, g), V),
                    (Q, K, perturbed(V, g, 0)), (Q, K, perturbed(V, g, T - 1)),
                    (Q, perturbed(K, g, 0), V), (Q, perturbed(K, g, T - 1), V)]
        label = f"Q{tuple(Q.shape)}, is_causal={is_causal}"
        results, problem = [], None
        for answer, problem in calls(ctx, variants, is_causal, regime):  # one shape: one trace, its graph run on each
            if problem:  # one failed run is enough
                break
            results.append((tensor(answer, "out"), tensor(answer, "weights")))
        if problem:
            evidence.append({"label": label, "ran": False, "problem": problem})
            if resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
            continue
        (out, weights), (out_q, weights_q), (out_k, weights_k), (out_v0, _), (out_vl, _), (out_k0, _), (out_kl, _) = results
        follows = {"q": changed(weights, weights_q) and changed(out, out_q),
                   "k": changed(weights, weights_k) and changed(out, out_k)}
        # the keys at one position reach the others' outputs: attention whose weights multiply another input
        # (`weights @ K`), which the values check names; only where the output follows both Q and K
        mixed_by = [(out_v0, out_vl)] + ([(out_k0, out_kl)] if follows["q"] and follows["k"] else [])
        mixes = any(changed(out[..., 1:, :], first[..., 1:, :]) or changed(out[..., :-1, :], last[..., :-1, :])
                    for first, last in mixed_by)
        evidence.append({"label": label, "ran": True, **follows, "mixes": mixes,
                         "finite": bool(torch.isfinite(out).all() and torch.isfinite(weights).all())})
    return evidence


@check("sdpa.shapes", part="sdpa", points=2, visibility="public",
       title_zh="返回 (out, weights) 且形状正确", title_en="returns (out, weights) with the right shapes")
def shapes(ctx: Context) -> Outcome:
    results = probe_shapes(ctx)
    failures = [(shape, problem) for shape, problem in results if problem]
    if not failures:
        return passed("所有形状（0 到 3 个前置 batch 维、T=1、长序列、d_k≠d_v）都正确。",
                      "All shapes right (zero to three leading dims, T = 1, long T, d_k != d_v).")
    shape, problem = failures[0]
    if all(s[2] != s[3] for s, _ in failures) and all(p is None for s, p in results if s[2] == s[3]):
        return value_dim_diagnosis(ctx, shape, problem)
    return leading_dims_diagnosis(ctx, results, shape, problem)


def value_dim_diagnosis(ctx: Context, shape: tuple, problem: Outcome) -> Outcome:
    """Right on every shape with d_k = d_v, wrong on each with d_k != d_v: a matter of V's width, not of ranks.
    An output as wide as Q and K (`weights @ K`) read the wrong tensor."""
    answer, _ = call(ctx, *shape_inputs(ctx, shape))
    out = answer.get("out") or {}
    as_wide_as_k = out.get("kind") == "tensor" and tuple(out["shape"])[-1:] == (shape[2],)
    zh, en = ("d_k = d_v 时都正确，d_k ≠ d_v 时出错：", "Right whenever d_k = d_v, wrong whenever they differ: ")
    if as_wide_as_k:
        zh += "输出的最后一维是 d_k 而不是 d_v，输出乘的是 Q 或 K，不是 V。"
        en += "the output's last dim is d_k, not d_v, so it multiplies Q or K, not V. "
    return dataclasses.replace(problem, zh=zh + problem.zh, en=en + problem.en,
                               mistakes=["wrong-input"] if as_wide_as_k else problem.mistakes)


def leading_dims_diagnosis(ctx: Context, results: list, shape: tuple, problem: Outcome) -> Outcome:
    """A failure that depends on how many leading dims the input has: code written for one rank
    (`k.transpose(0, 1)`, `softmax(dim=1)`, an einsum's `b...`, a `(1, T, T)` mask). Named when
    every shape of the failing rank fails while every shape of another rank passes, or where the
    text hard-codes a dim (static analysis) and another rank passes."""
    rank = len(shape[0])
    failing_ranks = {len(s[0]) for s, p in results if p}
    clean_ranks = sorted({len(s[0]) for s, p in results if not p} - failing_ranks)
    whole_rank_fails = all(p for s, p in results if len(s[0]) == rank)
    places = ctx.static.get("hardcoded-dims") or []
    if not clean_ranks or not (whole_rank_fails or places):
        return problem
    mistakes = [m for m in problem.mistakes if m != "wrong-return"] + ["hardcoded-dims"]
    where = ctx.student.submission.locate({**places[0], "function": "<module>"}) if places else problem.where
    works, fails = sorted(clean_ranks), sorted(failing_ranks)
    return dataclasses.replace(
        problem, mistakes=list(dict.fromkeys(mistakes)), where=where,
        zh=f"有 {'、'.join(map(str, works))} 个前置 batch 维时正确，{'、'.join(map(str, fails))} 个前置 batch 维时出错："
           "代码假定了输入的维数（其他检查在它接受的维数上进行）。" + problem.zh,
        en=f"Right with {', '.join(map(str, works))} leading dims, wrong with {', '.join(map(str, fails))}: the code "
           "assumes how many dims its input has (the other checks run at a number it accepts). " + problem.en)


@check("sdpa.causal_zeros", part="sdpa", points=2, visibility="public",
       title_zh="因果掩码：未来位置权重恰为 0，每行和为 1", title_en="causal mask: future weights exactly 0, rows sum to 1")
def causal_zeros(ctx: Context) -> Outcome:
    cases = [((2, 3), 6, 8, 8, 1.0), ((1,), 1, 4, 4, 1.0), ((2,), 9, 16, 16, 10.0), ((1, 2), 33, 8, 8, 1.0),
             ((2,), 7, 8, 8, 1.0)]
    # each layout in both regimes (checks.regimes); T = 1 is a kind of its own: one position shows no mask
    layouts = ["heads", "contiguous", "heads", "contiguous", "contiguous"]
    chosen = regimes(ctx, "sdpa.causal_zeros", [layout if T > 1 else "single" for layout, (_, T, *_) in zip(layouts, cases)])
    for seed, ((batch, T, d_k, d_v, scale), layout, regime) in enumerate(zip(cases, layouts, chosen), start=10):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed, scale)
        answer, problem = call(ctx, Q, K, V, layout=layout, regime=regime)  # the default must be causal
        if problem:
            return problem
        weights, out = tensor(answer, "weights"), tensor(answer, "out")
        mistakes = lambda: diagnose_numbers(ctx, answer, Q, K, V, True)  # noqa: E731
        figure = lambda outcome: with_figure(outcome, answer, Q, K, V, True)  # noqa: E731
        if torch.isnan(weights).any() or torch.isnan(out).any():
            row = int(torch.isnan(weights).any(-1).nonzero()[0, -1]) if torch.isnan(weights).any() else -1
            return figure(failed(f"T={T}：结果含 NaN（第一处在第 {row} 行）。",
                                 f"T={T}: the result contains NaN (first in row {row}).", mistakes()))
        future = reference.causal_future(T).expand_as(weights)
        leaked = weights[future]
        if (leaked != 0).any():
            count = int((leaked != 0).sum())
            # weights too small to matter anywhere but here: a finite fill (-100) that softmax leaves at 1e-40
            finite_fill = ["mask-fill-finite"] if float(leaked.abs().max()) < TINY_WEIGHT else []
            return figure(failed(
                f"T={T}：对角线以上有 {count} 个权重不为 0（最大 {float(leaked.abs().max()):.3g}），未来信息泄露。",
                f"T={T}: {count} weights above the diagonal are not exactly 0 (max {float(leaked.abs().max()):.3g}): "
                "the future leaks.", finite_fill or mistakes() or named_variant("mask-missing", ctx.static)))
        row_sums = weights.double().sum(-1)
        if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-5):
            worst = float((row_sums - 1).abs().max())
            return figure(failed(f"T={T}：权重每行之和应为 1，最大偏差 {worst:.3g}。",
                                 f"T={T}: each row of weights must sum to 1; worst deviation {worst:.3g}.", mistakes()))
    return passed("未来位置的权重恰为 0，每行和为 1，没有 NaN。", "Future weights are exactly 0, rows sum to 1, no NaN.")


@check("sdpa.values", part="sdpa", points=2, visibility="hidden",
       title_zh="数值与 float64 参考一致", title_en="values match a float64 reference")
def values(ctx: Context) -> Outcome:
    cases = [((2, 3), 6, 8, 8, True), ((2, 3), 6, 8, 8, False), ((3,), 7, 12, 5, True), ((2, 4), 5, 24, 24, True),
             ((1,), 16, 64, 64, False)]
    # every layout real use hands over in training and in inference (checks.regimes), then each (T, d) stored
    # transposed; the last case has one leading dim of size 1, where Part 2's layout would be contiguous
    combos = combinations(ctx, "sdpa.values", 4) + [("columns", regimes(ctx, "sdpa.values columns", [None])[0])]
    for seed, ((batch, T, d_k, d_v, is_causal), (layout, regime)) in enumerate(zip(cases, combos), start=20):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed)
        answer, problem = call(ctx, Q, K, V, is_causal, layout=layout, regime=regime)
        where = LAYOUT_WORDS[layout]
        label = (f"T={T}, d_k={d_k}, is_causal={is_causal}, {where[0]}, {REGIME_WORDS[regime][0]}",
                 f"T={T}, d_k={d_k}, is_causal={is_causal}, {where[1]}, {REGIME_WORDS[regime][1]}")
        problem = problem or compare(ctx, answer, Q, K, V, is_causal, *label)
        if problem:
            return problem
    return passed("因果与非因果、连续与非连续输入、训练与推理、d_k 不是 2 的幂：全部与参考一致。",
                  "Causal and not, contiguous and non-contiguous inputs, training and inference, d_k not a power of "
                  "two: all match the reference.")


LAYOUT_WORDS = {"contiguous": ("连续输入", "contiguous inputs"),
                "heads": ("多头转置后的非连续输入", "non-contiguous inputs as heads after transpose(1, 2)"),
                "columns": ("按列存放的非连续输入", "non-contiguous inputs stored by columns")}
REGIME_WORDS = {"training": ("训练（输入需要梯度）", "training (inputs need grad)"),
                "inference": ("推理（torch.no_grad）", "inference (torch.no_grad)")}
