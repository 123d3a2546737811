"""Part 2, the module's gradients: to the inputs and all four projections, on three distinct inputs and on one
tensor handed as q, k and v (self-attention, where the input's gradient is the sum of its three paths')."""
from __future__ import annotations

import torch

from grader.checks import Context, Outcome, check, diagnosis, passed, reference
from grader.checks.common import (GRADIENT_MISTAKES, GRADIENT_PROBE_FORWARD, compare_gradients, named_backward,
                                  needs_correct_values, unread_is_not_cut, wrong_forward)
from grader.checks.dtypes import is_dtype_handling
from grader.checks.mha.probing import (checked_calls, compare, first_error, inputs, linear_weights, model_args,
                                       out_tensor, run)
from grader.exercises.attention import PROJECTIONS
from grader.sandbox.request_tensors import alike
from grader.sandbox.requests import MhaRequest, Probe


@check("mha.gradients", part="mha", points=1, visibility="hidden",
       title_zh="梯度流到输入和四个投影层且数值正确", title_en="gradients reach the inputs and all four projections, and are right")
def gradients(ctx: Context) -> Outcome:
    outcome = named_backward(ctx, "mha", unread_is_not_cut(ctx, "mha", _gradients(ctx)))
    return needs_correct_values(ctx, "mha", outcome, own=GRADIENT_MISTAKES)


def _gradients(ctx: Context) -> Outcome:
    dim, heads, T = 12, 3, 5
    weights = {k: v.double() for k, v in linear_weights(ctx, dim, 160).items()}
    # distinct inputs, then one tensor handed as q, k and v: a path taken for self-attention alone meets it
    calls = [inputs(ctx, 2, T, dim, 161, dtype=torch.float64), inputs(ctx, 2, T, dim, 163, True, torch.float64)]
    cotangent = torch.randn(2, T, dim, generator=ctx.generator(162), dtype=torch.float64)
    doing = ("反向传播", "back-propagating")
    args = model_args(dim, heads, 8)
    answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=True, calls=calls, weights=weights,
                                                    dtype="float64", grad=True, cotangent=cotangent))
    results, problem = checked_calls(ctx, args, calls, answer, doing)
    tolerance = (1e-5, 1e-4)
    if problem and is_dtype_handling(first_error(answer)):
        # float64 is the grader's choice: a module written for float32 is checked in float32
        weights = {k: w.float() for k, w in weights.items()}
        calls = [_each_once(call, lambda x: x.float()) for call in calls]
        cotangent = cotangent.float()
        results, problem = run(ctx, args, calls, True, doing, weights=weights, grad=True, cotangent=cotangent)
        tolerance = (1e-4, 1e-3)
    if problem:
        return problem
    for call, result in zip(calls, results):
        problem = _against_the_reference(ctx, call, result, weights, heads, cotangent, tolerance)
        if problem:
            return problem
    return passed("q、k、v 与 wq/wk/wv/wo 的梯度都与参考一致（q、k、v 不同时，以及同一个张量同时作 q、k、v 时）。",
                  "Gradients for q, k, v and wq/wk/wv/wo match the reference, with distinct inputs and with one "
                  "tensor handed as q, k and v.")


def _each_once(call: dict, made) -> dict:
    """`made(tensor)` of each of the call's tensors, one tensor handed as several inputs still one tensor."""
    return dict(zip(call, alike(list(call.values()), made)))


def _against_the_reference(ctx: Context, call: dict, result: dict, weights: dict, heads: int, cotangent: torch.Tensor,
                           tolerance: tuple[float, float]) -> Outcome | None:
    # this call's forward, at the gradients' tolerance: code that computes otherwise when its inputs need grad is wrong
    expected_out = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, heads, True)
    if not diagnosis.close(out_tensor(result), expected_out, *tolerance):
        return wrong_forward(compare(out_tensor(result), call, weights, heads, True, ctx.static, GRADIENT_PROBE_FORWARD))
    # one tensor handed as several inputs is one leaf: its gradient sums every path's
    leaves = _each_once(call, lambda x: x.clone().requires_grad_(True))
    params = {name: w.clone().requires_grad_(True) for name, w in weights.items()}
    out = reference.multi_head_attention(leaves["q"], leaves["k"], leaves["v"], params, heads, True)
    wanted = reference.gradients(out, list(leaves.values()) + list(params.values()), cotangent)
    actual = (result.get("grads") or [None] * 3) + [(result.get("param_grads") or {}).get(n) for n in params]
    return compare_gradients(["q", "k", "v", *PROJECTIONS], actual, wanted, tolerance)
