"""Part 1, what repeat_kv computes: the shapes it promises, which input head each output head holds, the gradients."""
from __future__ import annotations

import torch

from grader.checks import diagnosis, Context, Outcome, check, failed, passed
from grader.checks.common import (GRADIENT_MISTAKES, GRADIENT_PROBE_FORWARD, TOLERANCE, compare_gradients,
                                  named_backward, needs_correct_values, non_finite, unidentified, where_largest,
                                  wrong_forward)
from grader.checks.regimes import combinations
from grader.checks.repeat.probing import call, head_map, keys, probe_shapes, value
from grader.exercises.kv_cache import reference


@check("repeat.shapes", part="repeat", points=1, visibility="public",
       title_zh="返回 (B, H_kv·n_rep, T, d) 的张量", title_en="returns a (B, H_kv·n_rep, T, d) tensor")
def shapes(ctx: Context) -> Outcome:
    failures = [problem for _, problem in probe_shapes(ctx) if problem]
    if failures:
        return failures[0]
    return passed("所有形状（n_rep = 1、只有一个键／值头、T = 1、长序列、宽度不是 2 的幂）都正确。",
                  "All shapes right (n_rep = 1, one key/value head, T = 1, long T, a width that is not a power of 2).")


# (B, H_kv, T, d, n_rep): groups of 2, 3 and 4 heads over 2 to 4 key/value heads, where a tiled output differs from
# the grouped one; then n_rep = 1, where the output is x itself
VALUE_CASES = [(2, 2, 5, 8, 2), (1, 3, 4, 6, 4), (2, 4, 3, 5, 3), (3, 2, 6, 4, 1)]


def wide_model(ctx: Context) -> tuple[int, int, int, int, int]:
    """B, H_kv, T, d, n_rep of the repeat.values case drawn per grading: 15 to 64 query heads, more than any of
    VALUE_CASES has (12 at most), so no code can take one path up to the fixed sizes and another only at the drawn one."""
    return ctx.sizes("repeat.values wide", range(1, 3), range(5, 9), range(2, 5), range(2, 6), range(3, 9))


def heads_words(heads: list[int | None]) -> str:
    return "[" + ", ".join("?" if h is None else str(h) for h in heads) + "]"


def compare(answer: dict, x: torch.Tensor, n_rep: int, label_zh: str, label_en: str) -> Outcome | None:
    """The output against the float64 reference; a mismatch says which input head each output head holds, and names
    `repeat-kv-order` where that is the tiled order (head h % H_kv)."""
    actual, expected = value(answer), reference.repeat_kv(x.double(), n_rep)
    atol, rtol = TOLERANCE[x.dtype]
    if diagnosis.close(actual, expected, atol, rtol):
        return None
    H_kv = x.size(1)
    grouped = [h // n_rep for h in range(H_kv * n_rep)]
    found = head_map(actual, x)
    tiled = found == [h % H_kv for h in range(H_kv * n_rep)] and diagnosis.close(
        actual, reference.repeat_kv(x.double(), n_rep, tile=True), atol, rtol)
    error, index = where_largest(actual, expected)
    zh = (f"{label_zh}：输出的第 0…{H_kv * n_rep - 1} 个头依次是输入的第 {heads_words(found)} 个头，应为 "
          f"{heads_words(grouped)}（第 h 个头是输入的第 h // n_rep 个头，相邻的 n_rep 个查询头共用一个键／值头）；"
          f"最大误差 {error:.3g}（位置 {index}）。")
    en = (f"{label_en}: output heads 0…{H_kv * n_rep - 1} hold input heads {heads_words(found)}, expected "
          f"{heads_words(grouped)} (head h is input head h // n_rep: each group of n_rep consecutive query heads shares "
          f"one key/value head); max error {error:.3g} at {index}.")
    if tiled:
        zh += "这是把头整体平铺（第 h 个头取输入的第 h % H_kv 个头）得到的顺序：各组的键和值配错了查询头。"
        en += (" That is the tiled order (head h takes input head h % H_kv): query heads meet another group's keys "
               "and values.")
    elif None in found:
        zh += "标为 ? 的输出头不等于任何一个输入头。"
        en += " Heads marked ? equal no input head."
    outcome = unidentified(non_finite(failed(zh, en, ["repeat-kv-order"] if tiled else []), actual, expected))
    outcome.cause = "values"
    return outcome


@check("repeat.values", part="repeat", points=1.5, visibility="hidden",
       title_zh="每个输出头是它那一组的键／值头（与 float64 参考一致）",
       title_en="each output head is its group's key/value head (matches a float64 reference)")
def values(ctx: Context) -> Outcome:
    # every layout real use hands over (keys after view(B, T, H_kv, d).transpose(1, 2), and contiguous), in training
    # and in inference, in an order drawn per grading (checks.regimes)
    # and one wide model drawn per grading past them: code that takes another path past the fixed cases' sizes meets it
    # (red team on the second lab: `x.repeat` only past 12 heads)
    cases = [*VALUE_CASES, wide_model(ctx)]
    combos = combinations(ctx, "repeat.values", len(cases))
    for seed, ((*dims, n_rep), (layout, regime)) in enumerate(zip(cases, combos), start=220):
        x = keys(ctx, *dims, seed)
        answer, problem = call(ctx, x, n_rep, layout=layout, regime=regime)
        label = (f"x{tuple(x.shape)}、n_rep={n_rep}", f"x{tuple(x.shape)}, n_rep={n_rep}")
        problem = problem or compare(answer, x, n_rep, *label)
        if problem:
            return problem
    return passed("每个输出头都是它那一组的键／值头（固定尺寸下 n_rep 为 1 到 4，另有一个 15 到 64 个头、n_rep 最多为 8 的宽模型；连续与非连续输入，训练与推理）。",
                  "Every output head is its group's key/value head (n_rep from 1 to 4 at fixed sizes, and a wide model "
                  "of 15 to 64 heads with n_rep up to 8; contiguous and non-contiguous inputs, training and inference).")


@check("repeat.gradients", part="repeat", points=0.5, visibility="hidden",
       title_zh="梯度传回 x（每个键／值头收到它那一组的梯度之和）",
       title_en="gradients reach x (each key/value head gets the sum over its group)")
def gradients(ctx: Context) -> Outcome:
    outcome = named_backward(ctx, "repeat", _gradients(ctx))
    shapes = ctx.outcomes.get("repeat.shapes")
    if not outcome.passed and shapes is not None and not shapes.passed and not set(GRADIENT_MISTAKES) & set(outcome.mistakes):
        # the grader's cotangent has the promised shape: an output of another shape fails the backward for that alone
        return Outcome(False, "未检查：需要输出形状正确（见 repeat.shapes）。",
                       "Not checked: needs the promised output shape (see repeat.shapes).", cause="cascade")
    return needs_correct_values(ctx, "repeat", outcome, own=GRADIENT_MISTAKES)


def _gradients(ctx: Context) -> Outcome:
    (first, _), = combinations(ctx, "repeat.gradients", 1)  # one call in each layout, the order drawn per grading
    layouts = [first, "contiguous" if first == "heads" else "heads"]
    for seed, ((B, H_kv, T, d, n_rep), layout) in enumerate(zip(((2, 2, 4, 6, 3), (1, 3, 5, 4, 2)), layouts), start=240):
        x = keys(ctx, B, H_kv, T, d, seed)
        cotangent = torch.randn(B, H_kv * n_rep, T, d, generator=ctx.generator(seed + 100))
        answer, problem = call(ctx, x, n_rep, grad=True, cotangent=cotangent, layout=layout, regime="training")
        if problem:
            return problem
        tolerance = TOLERANCE[x.dtype]
        # the forward of this very call, which ran in training: code that computes otherwise when its input needs grad
        # is wrong here, whatever its backward (the values check names the mistake)
        if not diagnosis.close(value(answer), reference.repeat_kv(x.double(), n_rep), *tolerance):
            return wrong_forward(compare(answer, x, n_rep, *GRADIENT_PROBE_FORWARD))
        leaf = x.double().requires_grad_(True)
        expected = torch.autograd.grad(reference.repeat_kv(leaf, n_rep), leaf, cotangent.double())
        problem = compare_gradients(["x"], answer.get("grads") or [None], expected, tolerance)
        if problem:
            return problem
    return passed("x 的梯度与参考一致：每个键／值头收到它那一组查询头的梯度之和。",
                  "The gradient for x matches the reference: each key/value head gets the sum over its group of "
                  "query heads.")
