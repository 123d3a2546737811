"""Part 2, what it computes: attention at all, the module's layout, the shapes, the causal mask, the values."""
from __future__ import annotations

import dataclasses

import torch

from grader.checks import scale_factor
from grader.exercises.attention import DROPOUTS, PROJECTIONS
from grader.checks import Context, Outcome, check, failed, passed
from grader.checks.common import changed, failed_with_error, named_variant, perturbed, resource_failure
from grader.checks.gates import attention_verdict, nan_mistakes
from grader.checks.mha.probing import (CONFIGS, compare, diagnose_numbers, in_regimes, inputs, linear_weights,
                                       model_args, out_tensor, probe_shapes, run, structural_ids)
from grader.checks.regimes import regimes
from grader.sandbox.requests import MhaInterfaceRequest, Probe

# (B, T, dim, n_heads, max_seq_len): every size (T, dim, n_heads, head_dim = 12) unlike each of VALUE_CONFIGS', so a
# factor computed from any size changes and only a constant stays
OTHER_WIDTH = (2, 6, 60, 5, 16)
# (B, T, dim, n_heads, max_seq_len, is_causal): both flags, and T = max_seq_len (no slicing needed)
EVIDENCE = [(2, 5, 32, 4, 16, True), (2, 5, 32, 4, 16, False), (2, 16, 32, 4, 16, True)]
VALUE_CONFIGS = [CONFIGS[0], CONFIGS[3], CONFIGS[4]]


@check("mha.computes_attention", part="mha", points=0, visibility="hidden", gate=True,
       title_zh="确实在计算注意力（输出随 q、k 变化，并混合各位置）",
       title_en="it computes attention (the output follows q and k and mixes positions)")
def computes_attention(ctx: Context) -> Outcome:
    evidence = []
    chosen = regimes(ctx, "mha.computes_attention", [None] * len(EVIDENCE))
    for seed, (B, T, dim, heads, max_len, is_causal) in enumerate(EVIDENCE, start=190):
        base = dict(inputs(ctx, B, T, dim, seed), regime=chosen[seed - 190])
        g = ctx.generator(seed + 100)
        # one position of q changed as well as of v: code reading its inputs in another order (`forward(v, k, q)`)
        # mixes what it takes for values, the grader's q, across positions; that is attention with a wrong input
        calls = [base, dict(base, q=perturbed(base["q"], g)), dict(base, k=perturbed(base["k"], g)),
                 dict(base, v=perturbed(base["v"], g, 0)), dict(base, v=perturbed(base["v"], g, T - 1)),
                 dict(base, q=perturbed(base["q"], g, 0)), dict(base, q=perturbed(base["q"], g, T - 1)),
                 dict(base, k=perturbed(base["k"], g, 0)), dict(base, k=perturbed(base["k"], g, T - 1))]
        results, problem = run(ctx, model_args(dim, heads, max_len), calls, is_causal, ("运行 forward", "running forward"),
                               weights=linear_weights(ctx, dim, seed))
        label = f"B={B}, T={T}, dim={dim}, is_causal={is_causal}"
        if problem:
            evidence.append({"label": label, "ran": False, "problem": problem})
            if resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
            continue
        out, out_q, out_k, out_v0, out_vl, out_q0, out_ql, out_k0, out_kl = (out_tensor(r) for r in results)
        follows_both = changed(out, out_q) and changed(out, out_k)
        # the keys at one position reach the others' outputs: attention whose weights multiply another input
        # (`att @ k`), which the values check names; only where the output follows both q and k
        mixed_by = ((out_v0, out_vl), (out_q0, out_ql)) + (((out_k0, out_kl),) if follows_both else ())
        mixes = any(changed(out[:, 1:], first[:, 1:]) or changed(out[:, :-1], last[:, :-1]) for first, last in mixed_by)
        evidence.append({"label": label, "ran": True, "q": changed(out, out_q), "k": changed(out, out_k), "mixes": mixes,
                         "finite": bool(torch.isfinite(out).all())})
    return attention_verdict(evidence, nan_mistakes(ctx))


@check("mha.interface", part="mha", points=1, visibility="public",
       title_zh="模块结构：wq/wk/wv/wo 无偏置线性层，两个 nn.Dropout",
       title_en="module layout: bias-free wq/wk/wv/wo, two nn.Dropout")
def interface(ctx: Context) -> Outcome:
    rates = {}  # args.dropout -> the layers built with it: a rate written as a constant stays the same at every one
    for is_causal, rate in ((True, 0.1), (False, 0.1), (True, 0.3)):
        args = model_args(dropout=rate)
        answer = ctx.student.call(Probe.MHA_INTERFACE, MhaInterfaceRequest(args=args, is_causal=is_causal))
        if "error" in answer:
            return failed_with_error(ctx, answer["error"], f"构造 MultiHeadAttention(args, is_causal={is_causal})",
                                     f"building MultiHeadAttention(args, is_causal={is_causal})")
        rates[rate] = answer["layers"]
    layers = rates[0.1]
    args = model_args(dropout=0.1)
    for name in PROJECTIONS:
        layer = layers[name]
        if layer["type"] != "Linear":
            return failed(f"self.{name} 应是 nn.Linear，实际是 {layer['type']}。",
                          f"self.{name} should be an nn.Linear, got {layer['type']}.")
        if (layer["in_features"], layer["out_features"]) != (args["dim"], args["dim"]) or layer["bias"]:
            return failed(f"self.{name} 应为 nn.Linear({args['dim']}, {args['dim']}, bias=False)，实际为 "
                          f"({layer['in_features']}, {layer['out_features']}, bias={layer['bias']})。",
                          f"self.{name} should be nn.Linear({args['dim']}, {args['dim']}, bias=False), got "
                          f"({layer['in_features']}, {layer['out_features']}, bias={layer['bias']}).")
    for name in DROPOUTS:
        layer = layers[name]
        constant = [rates[rate][name].get("p") for rate in rates]
        if layer["type"] == "Dropout" and constant[0] == constant[-1] and abs(constant[0] - 0.1) <= 1e-12:
            return failed(f"self.{name} 在 args.dropout=0.1 与 0.3 时都是 nn.Dropout({constant[0]:g})：概率写死了。",
                          f"self.{name} is nn.Dropout({constant[0]:g}) with args.dropout = 0.1 and 0.3 alike: the rate "
                          "is hard-coded.", ["dropout-hardcoded"])
        if layer["type"] != "Dropout" or abs(layer.get("p", -1) - args["dropout"]) > 1e-12:
            return failed(f"self.{name} 应是 nn.Dropout(args.dropout)，实际是 {layer['type']}{layer.get('p', '')}。",
                          f"self.{name} should be nn.Dropout(args.dropout), got {layer['type']} {layer.get('p', '')}.",
                          ["dropout-lowercase"] if "dropout-lowercase" in ctx.static else
                          ["dropout-hardcoded"] if layer["type"] == "Dropout" and len(set(constant)) == 1 else [])
    if "MultiheadAttention" in answer["submodules"]:
        return failed("模块内部使用了 nn.MultiheadAttention。", "The module uses nn.MultiheadAttention inside.", ["forbidden-api"])
    return passed("wq/wk/wv/wo 与两个 dropout 都符合接口。", "wq/wk/wv/wo and both dropouts match the interface.")


@check("mha.shapes", part="mha", points=1, visibility="public",
       title_zh="各种长度、宽度与头数下输出形状正确", title_en="right output shape for every length, width and head count")
def shapes(ctx: Context) -> Outcome:
    problem = next((problem for _, problem, _ in probe_shapes(ctx) if problem), None)
    if problem:
        return problem
    return passed("T=1、T=max_seq_len、B=1、dim 非 2 的幂、头数多于位置：形状都正确。",
                  "T = 1, T = max_seq_len, B = 1, dim not a power of two, more heads than positions: all shapes right.")


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
    # in the two regimes: code keyed on how its inputs come gives two outputs before the cut that differ
    results, problem = run(ctx, model_args(dim, 4, 16), in_regimes(ctx, "mha.causal_no_leak", [first, second]), True,
                           ("运行因果 forward", "running the causal forward"), weights=weights)
    if problem:
        return problem
    a, b = out_tensor(results[0])[:, :cut], out_tensor(results[1])[:, :cut]
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):  # NaN is not a leak: nothing can be compared
        return failed(f"位置 <{cut} 的输出含 NaN，无法检验未来是否影响过去。",
                      f"Outputs at positions before {cut} are NaN, so whether the future reaches the past cannot be measured.",
                      diagnose_numbers(out_tensor(results[0]), first, weights, 4, True, ctx.static))
    if not torch.equal(a, b):
        change = float(torch.nan_to_num((a - b).abs(), nan=float("inf")).max())
        mistakes = diagnose_numbers(out_tensor(results[0]), first, weights, 4, True, ctx.static)
        if not mistakes:  # no known variant: is the mask applied at all?
            unmasked, _ = run(ctx, model_args(dim, 4, 16), [first], False, ("运行非因果 forward", "running forward"),
                              weights=weights)
            if unmasked and torch.equal(out_tensor(unmasked[0]), out_tensor(results[0])):
                mistakes = named_variant("mask-missing", ctx.static)
        return failed(f"只改变了位置 ≥{cut} 的输入，位置 <{cut} 的输出却变了（最大变化 {change:.3g}）：未来信息泄露。",
                      f"Only positions >= {cut} changed, yet outputs before {cut} changed (max {change:.3g}): the future leaks.",
                      mistakes)
    return passed("改变未来位置时，过去位置的输出逐位不变。", "Earlier outputs are bit-for-bit unchanged when the future changes.")


def constant_scale(ctx: Context, problem: Outcome, first: tuple, is_causal: bool) -> Outcome:
    """A wrong factor measured again at other sizes: unchanged, it is a constant (`np.sqrt(64)`), and the
    finding says so instead of naming the size it happened to equal. `first` is (output, call, weights, sizes)
    of the failed probe."""
    if problem.mistakes != ["wrong-scale"]:
        return problem
    first_out, first_call, first_weights, (first_T, first_dim, first_heads) = first
    first_factor = scale_factor.factor_of_module(first_out, first_call, first_weights, first_heads, is_causal)
    first_found = scale_factor.finding(first_factor, scale_factor.sizes_of_module(first_T, first_dim, first_heads))
    B, T, dim, heads, max_len = OTHER_WIDTH
    weights, call = linear_weights(ctx, dim, 128), inputs(ctx, B, T, dim, 129)
    results, error = run(ctx, model_args(dim, heads, max_len), [call], is_causal, ("运行 forward", "running forward"),
                         weights=weights)
    if error:
        return problem
    factor = scale_factor.factor_of_module(out_tensor(results[0]), call, weights, heads, is_causal)
    named = scale_factor.constant(first_found, factor, scale_factor.sizes_of_module(T, dim, heads))
    if named is None or named is first_found:
        return problem
    first_zh, first_en = problem.zh.split("你的注意力分数")[0], problem.en.split(" Your scores are")[0]
    return dataclasses.replace(problem, zh=first_zh + named.zh, en=f"{first_en} {named.en}")


@check("mha.values", part="mha", points=2, visibility="hidden",
       title_zh="加载参考权重后数值与 float64 参考一致", title_en="with reference weights, values match a float64 reference")
def values(ctx: Context) -> Outcome:
    for seed, (B, T, dim, heads, max_len) in enumerate(VALUE_CONFIGS, start=120):
        weights = linear_weights(ctx, dim, seed)
        for is_causal in (True, False):
            calls = in_regimes(ctx, f"mha.values {seed} {is_causal}", [
                inputs(ctx, B, T, dim, seed + 50), inputs(ctx, B, T, dim, seed + 60, self_attention=True)])
            results, problem = run(ctx, model_args(dim, heads, max_len), calls, is_causal,
                                   ("运行 forward", "running forward"), weights=weights)
            if problem:
                return problem
            for call, result in zip(calls, results):
                problem = compare(out_tensor(result), call, weights, heads, is_causal, ctx.static,
                                  (f"B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal}",) * 2,
                                  structural_ids(result))
                if problem:
                    return constant_scale(ctx, problem, (out_tensor(result), call, weights, (T, dim, heads)),
                                          is_causal)
    return passed("因果与非因果、q/k/v 不同或相同：输出都与参考一致。",
                  "Causal and not, distinct or shared q/k/v: every output matches the reference.")
