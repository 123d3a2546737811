"""Part 1, numerics: float16 / bfloat16, nothing flowing from the future, the gradients."""
from __future__ import annotations

import torch

from grader.checks import diagnosis, reference, Context, Outcome, check, failed, passed
from grader.checks.common import (GRADIENT_MISTAKES, GRADIENT_PROBE_FORWARD, an_input_is_unread, compare_gradients,
                                  named_backward, named_variant, needs_correct_values, unread_is_not_cut, wrong_forward)
from grader.checks.dtypes import (UNPROMISED_DTYPES, changed_dtype_failure, dtype_handling_advice, is_dtype_handling,
                                  low_precision_passed, promoted_dtype_note, unpromised_dtype_note)
from grader.checks.regimes import SPREAD_LAYOUTS, combinations
from grader.checks.sdpa.probing import call, compare, diagnose_numbers, qkv, tensor
from grader.sandbox.requests import REGIMES


@check("sdpa.low_precision", part="sdpa", points=1, visibility="hidden",
       title_zh="float16 / bfloat16 输入", title_en="float16 / bfloat16 inputs")
def low_precision(ctx: Context) -> Outcome:
    return needs_correct_values(ctx, "sdpa", _low_precision(ctx), own=("mask-value-overflow",))


def _low_precision(ctx: Context) -> Outcome:
    notes = []
    # float16, which is graded, in every layout and regime (checks.regimes); bfloat16, which only advises, in one
    probes = [(torch.float16, combo) for combo in combinations(ctx, "sdpa.low_precision", 4)]
    probes.append((torch.bfloat16, combinations(ctx, "sdpa.low_precision bfloat16", 1)[0]))
    for seed, (dtype, (layout, regime)) in enumerate(probes, start=30):
        name = str(dtype).replace("torch.", "")
        Q, K, V = qkv(ctx, (2, 2), 6, 16, 16, seed, dtype=dtype)
        answer, problem = call(ctx, Q, K, V, True, layout=layout, regime=regime)
        advice = dtype_handling_advice(ctx, answer["error"], name, "sdpa") if "error" in answer else None
        if failure := changed_dtype_failure(dtype, advice):  # float16 is graded: a changed dtype costs the check
            return failure
        if advice:
            notes.append(advice)
            continue
        # the reference starts from the same rounded inputs, so only the student's arithmetic differs
        problem = problem or compare(ctx, answer, Q, K, V, True, name, name)
        promoted = None if problem else promoted_dtype_note(
            ctx, "sdpa", dtype, {"out": tensor(answer, "out"), "weights": tensor(answer, "weights")})
        if failure := changed_dtype_failure(dtype, promoted):  # float16 is graded: a changed dtype costs the check
            return failure
        if promoted:
            notes.append(promoted)
        if problem and dtype in UNPROMISED_DTYPES:
            notes.append(unpromised_dtype_note(ctx, name, answer.get("error"), problem))
        elif problem:
            return problem
    return low_precision_passed(notes)


CAUSAL_WEIGHTS_LEAKY_OUTPUT = (
    "你返回的注意力权重是因果的（未来位置的权重恰为 0），所以掩码没有问题：未来是在权重与 V 相乘时混进来的，"
    "输出并不是 weights @ V。检查与 V 相乘的那一步（例如 einsum 里 V 的序列轴要和权重的键轴同名）。",
    " Your returned weights are causal (future weights are exactly 0), so the mask is fine: the future comes in where "
    "the weights meet V, and the output is not weights @ V. Check the product with V (in an einsum, for example, "
    "V's sequence axis must have the same name as the weights' key axis).")


def _weights_are_causal(answer: dict) -> bool:
    """The returned weights are (..., T, T) with every entry above the diagonal exactly 0."""
    weights = tensor(answer, "weights")
    if weights is None or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        return False
    return bool((weights[..., reference.causal_future(weights.shape[-1])] == 0).all())


# How far earlier outputs may move when only the future changes. Reordered arithmetic (a row max taken before
# masking includes future scores) rounds them differently by a few units in the last place; in float64 (roundoff
# 1.1e-16) 1e-12 leaves thousands of them for these O(1) outputs, while a real leak moves them by O(weight).
# Weights on the future must still be exactly 0: sdpa.causal_zeros holds that. Code written for float32 (a float32
# mask) is probed in float32, at that dtype's value tolerance.
LEAK_TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5}


def _earlier_outputs_changed(ctx: Context, first: dict, second: dict, inputs: tuple, cut: int,
                             tolerance: float) -> Outcome | None:
    """The failure where outputs before `cut` differ between the two answers (only the future changed), else None."""
    Q, K, V = inputs
    a, b = tensor(first, "out")[..., :cut, :], tensor(second, "out")[..., :cut, :]
    masked = _weights_are_causal(first) and _weights_are_causal(second)
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):  # NaN is not a leak: nothing can be compared
        return failed(f"位置 <{cut} 的输出含 NaN 或 inf，无法检验未来是否影响过去。",
                      f"Outputs at positions before {cut} are NaN or inf, so whether the future reaches the past cannot be measured.",
                      diagnose_numbers(ctx, first, Q, K, V, True))
    if diagnosis.close(a, b, tolerance, 0):
        return None
    change = float(torch.nan_to_num((a - b).abs(), nan=float("inf")).max())
    zh, en = (f"只改变了位置 ≥{cut} 的输入，位置 <{cut} 的输出却变了（最大变化 {change:.3g}）。",
              f"Only positions >= {cut} changed, yet outputs before {cut} changed (max change {change:.3g}).")
    mistakes = diagnose_numbers(ctx, first, Q, K, V, True)
    if masked and set(mistakes) <= {"wrong-input"}:
        # the mask works: the future comes in where the weights meet V, so mask-missing would mislead
        return failed(zh + CAUSAL_WEIGHTS_LEAKY_OUTPUT[0], en + CAUSAL_WEIGHTS_LEAKY_OUTPUT[1], mistakes)
    return failed(zh, en, mistakes or ([] if masked else named_variant("mask-missing", ctx.static)))


def _future_changed(ctx: Context, dtype: torch.dtype, T: int, cut: int):
    """(pairs of answers, the inputs of the first, a problem): everything at positions >= cut redrawn in the second of
    each pair. The pairs in the two layouts, the two of a pair in the two regimes, so the four meet every layout and
    regime (checks.regimes): code keyed on how its inputs come gives two outputs before the cut that differ. Only a pair
    is compared: arithmetic in float32 rounds otherwise in another layout."""
    Q, K, V = (x.to(dtype) for x in qkv(ctx, (2, 2), T, 8, 8, 40))
    g = ctx.generator(41)
    Q2, K2, V2 = (x.clone() for x in (Q, K, V))
    for x in (Q2, K2, V2):
        x[..., cut:, :] = (torch.randn(x[..., cut:, :].shape, generator=g) * 5).to(dtype)
    (_, regime), = combinations(ctx, "sdpa.no_future_leak", 1)
    other_regime = next(each for each in REGIMES if each != regime)
    pairs = []
    for layout, regimes in zip(SPREAD_LAYOUTS, ((regime, other_regime), (other_regime, regime))):
        first, problem = call(ctx, Q, K, V, True, layout=layout, regime=regimes[0])
        second, problem2 = call(ctx, Q2, K2, V2, True, layout=layout, regime=regimes[1])
        if problem or problem2:
            return [(first, second)], (Q, K, V), problem or problem2
        pairs.append((first, second))
    return pairs, (Q, K, V), None


@check("sdpa.no_future_leak", part="sdpa", points=1, visibility="hidden",
       title_zh="改变未来位置不影响过去的输出，梯度也不回传到未来",
       title_en="changing the future leaves earlier outputs unchanged; no gradient flows to the future")
def no_future_leak(ctx: Context) -> Outcome:
    T, cut = 8, 3
    pairs, (Q, K, V), problem = _future_changed(ctx, torch.float64, T, cut)
    if problem and is_dtype_handling(pairs[-1][0].get("error") or pairs[-1][1].get("error")):
        pairs, (Q, K, V), problem = _future_changed(ctx, torch.float32, T, cut)
    if problem:
        return problem
    tolerance = LEAK_TOLERANCE[Q.dtype]
    for first, second in pairs:
        leak = _earlier_outputs_changed(ctx, first, second, (Q, K, V), cut, tolerance)
        if leak:
            return leak
    masked = all(_weights_are_causal(answer) for pair in pairs for answer in pair)
    cotangent = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)
    cotangent[..., :cut, :] = torch.randn(cotangent[..., :cut, :].shape, generator=ctx.generator(42)).to(Q.dtype)
    # the gradient is taken in training, in the layout drawn per grading
    answer, problem = call(ctx, Q, K, V, True, grad=True, cotangent=cotangent,
                           layout=combinations(ctx, "sdpa.no_future_leak gradient", 1)[0][0])
    if problem:
        return problem
    grads = answer.get("grads")
    # an input the code never reads has no gradient, and nothing of it leaks
    if not grads or (any(gr is None for gr in grads[1:]) and not an_input_is_unread(ctx, "sdpa")):
        return failed("输出没有连到 K、V 的梯度。", "The output has no gradient path to K and V.", ["broken-grad"])
    for name, gr in zip("KV", grads[1:]):
        if gr is None:
            continue
        future_grad = gr["value"][..., cut:, :]
        if (future_grad.abs() > tolerance).any() or not torch.isfinite(future_grad).all():
            zh = f"过去位置的输出对未来的 {name} 有非零梯度（最大 {float(future_grad.abs().max()):.3g}）。"
            en = (f"Earlier outputs have a non-zero gradient with respect to future {name} "
                  f"(max {float(future_grad.abs().max()):.3g}).")
            if masked:
                return failed(zh + CAUSAL_WEIGHTS_LEAKY_OUTPUT[0], en + CAUSAL_WEIGHTS_LEAKY_OUTPUT[1])
            return failed(zh, en, ["mask-missing"])
    return passed(f"改变未来位置时过去的输出不变（容差 {tolerance:g}，只允许舍入误差），对未来的梯度为 0。",
                  f"Earlier outputs are unchanged when the future changes (within {tolerance:g}: rounding only) and "
                  "their gradient to the future is 0.")


@check("sdpa.gradients", part="sdpa", points=1, visibility="hidden",
       title_zh="梯度正确（float64 gradcheck 与参考梯度）", title_en="gradients are right (float64 gradcheck and reference)")
def gradients(ctx: Context) -> Outcome:
    outcome = named_backward(ctx, "sdpa", unread_is_not_cut(ctx, "sdpa", _gradients(ctx)))
    return needs_correct_values(ctx, "sdpa", outcome, own=GRADIENT_MISTAKES)


def _gradients(ctx: Context) -> Outcome:
    (first, _), = combinations(ctx, "sdpa.gradients", 1)  # one call in each layout, the order drawn per grading
    layouts = [first, next(each for each in SPREAD_LAYOUTS if each != first)]
    for (seed, is_causal), layout in zip(((50, True), (51, False)), layouts):
        Q, K, V = (x.double() for x in qkv(ctx, (2,), 5, 4, 3, seed))
        cotangent = torch.randn(*Q.shape[:-1], 3, generator=ctx.generator(seed + 100), dtype=torch.float64)
        answer, problem = call(ctx, Q, K, V, is_causal, grad=True, cotangent=cotangent, gradcheck=True, layout=layout)
        tolerance = (1e-5, 1e-4)
        if problem and is_dtype_handling(answer.get("error")):
            # float64 is the grader's choice, not the exercise's: code written for float32 (a float32
            # mask, a .float() softmax) is checked in float32, without gradcheck, which needs float64
            Q, K, V, cotangent = (x.float() for x in (Q, K, V, cotangent))
            answer, problem = call(ctx, Q, K, V, is_causal, grad=True, cotangent=cotangent, layout=layout)
            tolerance = (1e-4, 1e-3)
        if problem:
            return problem
        # the forward of this very call, which ran in training, at the gradients' tolerance: code that computes
        # otherwise when its inputs need grad is wrong here, whatever its backward (the values check names the mistake)
        expected_out, _ = reference.attention(Q, K, V, is_causal)
        if not diagnosis.close(tensor(answer, "out"), expected_out, *tolerance):
            return wrong_forward(compare(ctx, answer, Q, K, V, is_causal, *GRADIENT_PROBE_FORWARD))
        grads = answer.get("grads")
        if not grads or any(g is None for g in grads):
            missing = ", ".join(n for n, g in zip("QKV", grads or [None] * 3) if g is None)
            return failed(f"梯度没有传到 {missing}：计算图被切断了。", f"No gradient reaches {missing}: the graph is cut.",
                          ["broken-grad"])
        leaves = [x.clone().requires_grad_(True) for x in (Q, K, V)]
        out, _ = reference.attention(*leaves, is_causal)
        expected = reference.gradients(out, leaves, cotangent)
        problem = compare_gradients(list("QKV"), grads, expected, tolerance)
        if problem:
            return problem
        gradcheck = answer.get("gradcheck", {"passed": True})  # absent: the float32 fallback above
        if not gradcheck.get("passed"):
            detail = diagnosis.quoted({"message": (gradcheck.get("error") or {}).get("message", "")}, 300)
            outcome = failed(f"gradcheck 未通过：{detail}", f"gradcheck failed: {detail}",
                             diagnosis.from_error(gradcheck.get("error") or {}, ctx.static))
            outcome.cause = "values"
            return outcome
    return passed("Q、K、V 的梯度与参考一致，gradcheck 通过。", "Gradients for Q, K, V match the reference; gradcheck passes.")
