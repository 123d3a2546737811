"""Part 3, what the whole prompt's pass computes: the shapes it promises (its projections' too), its values against the
float64 reference, its gradients."""
from __future__ import annotations

import torch

from grader.checks import Context, Outcome, check, diagnosis, failed, passed
from grader.checks.common import (GRADIENT_MISTAKES, MODULE_TOLERANCE, compare_gradients,
                                  named_backward, needs_correct_values, non_finite, unidentified, where_largest,
                                  wrong_forward)
from grader.checks.gqa import variants
from grader.checks.gqa.probing import (CONFIGS, labelled, linear_weights, model_args, out_tensor, probe_shapes, prompt,
                                       run)
from grader.checks.regimes import regimes
from grader.exercises.kv_cache import PROJECTIONS, reference


@check("gqa.shapes", part="gqa", points=1, visibility="public",
       title_zh="输出 (B, T, dim)，wk/wv 按 n_kv_heads 建", title_en="returns (B, T, dim); wk/wv sized by n_kv_heads")
def shapes(ctx: Context) -> Outcome:
    problem = next((problem for _, problem in probe_shapes(ctx) if problem), None)
    if problem:
        return problem
    return passed("n_kv_heads 为 1、少于 n_heads、等于 n_heads，B=1 与 B>1，T=1 与长序列，dim 非 2 的幂：形状都正确。",
                  "n_kv_heads of 1, fewer than n_heads and equal to it, B = 1 and B > 1, T = 1 and a long T, dim not a "
                  "power of two: every shape right.")


# the configurations the values are compared at: a few key/value heads, one, and as many as the queries
VALUE_CONFIGS = [CONFIGS[0], CONFIGS[3], CONFIGS[1], CONFIGS[2], CONFIGS[5]]


def compare(actual: torch.Tensor | None, x: torch.Tensor, weights: dict, config: tuple) -> Outcome | None:
    """None where the output matches the reference; else the failure, with the mistakes its numbers show."""
    n_heads, n_kv_heads = config[3], config[4]
    expected = reference.gqa_forward(x, weights, n_heads, n_kv_heads).y
    atol, rtol = MODULE_TOLERANCE[x.dtype]
    if diagnosis.close(actual, expected, atol, rtol):
        return None
    error, index = where_largest(actual, expected)
    outcome = failed(f"{labelled(config)}：整段提示词的因果前向与参考实现不符，最大误差 {error:.3g}（位置 {index}，"
                     f"容差 atol={atol:g}）。",
                     f"{labelled(config)}: the whole prompt's causal pass differs from the reference, max error "
                     f"{error:.3g} at {index} (atol={atol:g}).",
                     variants.mistakes(actual, x, weights, n_heads, n_kv_heads))
    outcome = unidentified(non_finite(outcome, actual, expected))
    outcome.cause = "values"
    return outcome


@check("gqa.values", part="gqa", points=2.5, visibility="hidden",
       title_zh="加载参考权重后，整段提示词的因果前向与 float64 参考一致",
       title_en="with reference weights, the whole prompt's causal pass matches a float64 reference")
def values(ctx: Context) -> Outcome:
    # and one long prompt drawn per grading (40 to 96 positions): code that takes another path past the fixed
    # configurations' lengths meets it (red team on the second lab: no mask past 24 positions kept every point)
    T, kv_heads, n_rep, head_dim = ctx.sizes("gqa.values long", range(40, 97), range(1, 3), range(2, 4), range(4, 9))
    long = (1, T, kv_heads * n_rep * head_dim, kv_heads * n_rep, kv_heads, T, 1)
    for seed, config in enumerate([*VALUE_CONFIGS, long], start=320):
        B, T, dim = config[:3]
        weights = linear_weights(ctx, model_args(*config), seed)
        xs = [prompt(ctx, B, T, dim, seed + 50), prompt(ctx, B, T, dim, seed + 60)]
        # the two prompts in the two regimes, the first drawn per grading
        for x, regime in zip(xs, regimes(ctx, f"gqa.values {seed}", [None, None])):
            answer, problem = run(ctx, config, x, weights, regime=regime)
            problem = problem or compare(out_tensor(answer), x, weights, config)
            if problem:
                return problem
    return passed("n_kv_heads 为 1、少于和等于 n_heads，B=1 与 B>1，T=1、更长以及 40 个位置以上：输出都与参考一致。",
                  "One, a few and as many key/value heads as queries, B = 1 and B > 1, T = 1, longer and past 40 "
                  "positions: every output matches the reference.")


@check("gqa.gradients", part="gqa", points=1, visibility="hidden",
       title_zh="梯度传回 x 与 wq/wk/wv/wo（与参考一致）", title_en="gradients reach x and wq/wk/wv/wo (match the reference)")
def gradients(ctx: Context) -> Outcome:
    outcome = named_backward(ctx, "gqa", _gradients(ctx))
    return needs_correct_values(ctx, "gqa", outcome, own=GRADIENT_MISTAKES)


def _gradients(ctx: Context) -> Outcome:
    config = CONFIGS[0]
    B, T, dim = config[:3]
    weights = linear_weights(ctx, model_args(*config), 340)
    x = prompt(ctx, B, T, dim, 341)
    cotangent = torch.randn(B, T, dim, generator=ctx.generator(342))
    answer, problem = run(ctx, config, x, weights, grad=True, cotangent=cotangent, regime="training")
    if problem:
        return problem
    n_heads, n_kv_heads = config[3], config[4]
    tolerance = MODULE_TOLERANCE[x.dtype]
    # the forward of this very call, which ran in training: code that computes otherwise when its input needs grad is
    # wrong here, whatever its backward (the values check names the mistake)
    if not diagnosis.close(out_tensor(answer), reference.gqa_forward(x, weights, n_heads, n_kv_heads).y, *tolerance):
        return wrong_forward(compare(out_tensor(answer), x, weights, config))
    leaves = [x.double().requires_grad_(True)] + [weights[name].double().requires_grad_(True) for name in PROJECTIONS]
    out = reference.gqa_forward(leaves[0], dict(zip(PROJECTIONS, leaves[1:])), n_heads, n_kv_heads).y
    expected = torch.autograd.grad(out, leaves, cotangent.double())
    grads = answer.get("grads") or {}
    names = ["x", *PROJECTIONS]
    # a cut first (no gradient, or zeros, where the reference has some): it is why the others differ too
    order = sorted(range(len(names)), key=lambda i: not cut(grads.get(names[i]), expected[i]))
    problem = compare_gradients([names[i] for i in order], [grads.get(names[i]) for i in order],
                                [expected[i] for i in order], tolerance)
    if problem:
        return problem
    return passed("x 与 wq、wk、wv、wo 的梯度都与参考一致。", "The gradients for x and wq, wk, wv, wo match the reference.")


def cut(got: dict | None, wanted: torch.Tensor) -> bool:
    return got is None or "value" not in got or (float(got["value"].abs().max()) == 0 and float(wanted.abs().max()) > 0)
