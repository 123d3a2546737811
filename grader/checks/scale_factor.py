"""Recover the factor a student divided the attention scores by, and name it.

A wrong scale of any kind (√T, d_k, √dim in a module, none at all, `d_k ** 1/2`, ...) is still
softmax(Q Kᵀ / c): find c from the student's own numbers, check that c alone reproduces them, and
say which size it is. Pure functions of float64 tensors; the checks call them in the parent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from grader.checks import reference

NAME_TOLERANCE = 1e-2  # relative: a fitted factor names a size within 1 %
REPRODUCES = (1e-3, 1e-3)  # (atol, rtol): the fitted factor must reproduce the student's numbers
SEARCH = torch.logspace(-3, 4, 281, dtype=torch.float64)  # candidate factors for a module, 2.5 % apart


@dataclass(frozen=True)
class ScaleFinding:
    factor: float  # the student's scores are Q Kᵀ / factor
    used_zh: str  # the factor named ("√T = 2.45"), or just its value when no size fits
    used_en: str
    expected: str  # "√d_k = 2.83"
    mistake: str  # "missing-scale" (factor 1) or "wrong-scale"

    @property
    def zh(self) -> str:
        if self.mistake == "missing-scale":
            return f"你的注意力分数没有缩放（相当于除以 1）；应除以 {self.expected}。"
        return f"你的注意力分数{self.used_zh}；应除以 {self.expected}。"

    @property
    def en(self) -> str:
        if self.mistake == "missing-scale":
            return f"Your scores are not scaled (divided by 1); divide by {self.expected}."
        return f"Your scores are {self.used_en}; divide by {self.expected} instead."


def sizes_of_attention(Q: torch.Tensor, V: torch.Tensor) -> dict[str, int]:
    """Part 1's sizes, the expected one first."""
    return {"d_k": Q.size(-1), "T": Q.size(-2), "d_v": V.size(-1)}


def sizes_of_module(T: int, dim: int, n_heads: int) -> dict[str, int]:
    """Part 2's sizes, the expected one (per head) first."""
    return {"head_dim": dim // n_heads, "dim": dim, "T": T, "n_heads": n_heads}


def candidates(sizes: dict[str, int]) -> list[tuple[str, float]]:
    """The factors students use, by name: √size and size, then what Python makes of `d_k ** 1/2`
    (`s / d_k ** 1/2` divides by 2·d_k, `s / (d_k ** 1/2)` by d_k / 2), then 1."""
    named = [pair for name, size in sizes.items() for pair in ((f"√{name}", math.sqrt(size)), (name, float(size)))]
    expected_name, expected_size = next(iter(sizes.items()))
    named += [(f"2·{expected_name}", 2.0 * expected_size), (f"{expected_name} / 2", expected_size / 2)]
    return named + [("1", 1.0)]


def name(factor: float, sizes: dict[str, int]) -> str | None:
    """Every size the factor equals, joined ("d_k = d_v = 8"), or None."""
    matches = [label for label, value in candidates(sizes) if abs(factor - value) <= NAME_TOLERANCE * value]
    return " = ".join(dict.fromkeys(matches)) or None


def finding(factor: float | None, sizes: dict[str, int]) -> ScaleFinding | None:
    """A finding when the factor is not the expected √(first size); None when it is, or is unknown."""
    expected_name, expected_size = next(iter(sizes.items()))
    expected = math.sqrt(expected_size)
    if factor is None or not math.isfinite(factor) or factor <= 0 or abs(factor - expected) <= NAME_TOLERANCE * expected:
        return None
    shown_expected = f"√{expected_name} = {expected:.3g}"
    if abs(factor - 1) <= NAME_TOLERANCE:
        return ScaleFinding(factor, "", "", shown_expected, "missing-scale")
    divided = name(factor, sizes)
    multiplied = name(1 / factor, sizes) if factor < 1 else None
    if multiplied:
        zh, en = f"乘以了 {multiplied} = {1 / factor:.3g}", f"multiplied by {multiplied} = {1 / factor:.3g}"
    elif divided:
        zh, en = f"除以了 {divided} = {factor:.3g}", f"divided by {divided} = {factor:.3g}"
    else:
        zh, en = f"除以了 {factor:.3g}", f"divided by {factor:.3g}"
    return ScaleFinding(factor, zh, en, shown_expected, "wrong-scale")


def constant(found: ScaleFinding | None, factor_elsewhere: float | None, sizes_elsewhere: dict[str, int]) -> ScaleFinding | None:
    """The finding named as a constant when the same factor divides the scores at other sizes too (`np.sqrt(64)`):
    that it equals one size of the first probe is a coincidence, not what the code computes."""
    if found is None or found.mistake != "wrong-scale" or factor_elsewhere is None \
            or abs(factor_elsewhere - found.factor) > NAME_TOLERANCE * found.factor \
            or abs(factor_elsewhere - math.sqrt(next(iter(sizes_elsewhere.values())))) <= NAME_TOLERANCE * factor_elsewhere:
        return found
    sizes = ", ".join(f"{name} = {size}" for name, size in sizes_elsewhere.items())
    return ScaleFinding(found.factor, f"除以了常数 {found.factor:.3g}（换成 {sizes} 时还是它，与尺寸无关）",
                        f"divided by the constant {found.factor:.3g} (the same with {sizes}: no size of the input)",
                        found.expected, "wrong-scale")


def factor_from_weights(Q: torch.Tensor, K: torch.Tensor, weights: torch.Tensor | None, is_causal: bool) -> float | None:
    """c such that weights = softmax(Q Kᵀ / c) (masked when causal), or None when no c reproduces them.

    Within a row, log w_ij = s_ij / c - log Z_i: the row-centred log weights are the row-centred
    scores times 1/c, a least-squares slope through the origin.
    """
    if weights is None or tuple(weights.shape) != (*Q.shape[:-1], K.size(-2)) or Q.size(-2) < 2:
        return None
    scores = Q.double() @ K.double().transpose(-2, -1)
    w = weights.double()
    T = Q.size(-2)
    usable = torch.isfinite(w) & (w > 0)
    if is_causal:
        usable &= ~reference.causal_future(T)
    count = usable.sum(-1, keepdim=True).clamp(min=1)
    logs = torch.where(usable, w.clamp(min=1e-300).log(), 0.0)
    x = torch.where(usable, scores - (scores * usable).sum(-1, keepdim=True) / count, 0.0)
    y = torch.where(usable, logs - logs.sum(-1, keepdim=True) / count, 0.0)
    slope = float((x * y).sum() / (x * x).sum()) if float((x * x).sum()) > 0 else 0.0
    if not slope > 0:
        return None
    _, uniform = reference.attention(Q, K, K.new_zeros(*K.shape[:-1], 1), is_causal, scale=0.0)
    if _close(w, uniform):  # the weights ignore the scores: the slope is rounding noise, and no divisor explains them
        return None
    factor = 1 / slope
    _, refit = reference.attention(Q, K, K.new_zeros(*K.shape[:-1], 1), is_causal, scale=slope)  # weights only
    return factor if _close(w, refit) else None


def factor_of_module(actual: torch.Tensor | None, call: dict, weights: dict, n_heads: int,
                     is_causal: bool) -> float | None:
    """The one factor that, used in every head, reproduces the module's output; None when none does.

    The module returns no weights, so search: a log-spaced grid, then golden-section refinement
    around the best point.
    """
    if actual is None or tuple(actual.shape) != tuple(call["q"].shape):
        return None
    target = actual.double()
    shared: dict = {}  # the projections every factor shares (reference.multi_head_attention)

    def misfit(factor: float) -> float:
        out = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal,
                                             scale=1 / factor, memo=shared)
        return float(torch.nan_to_num((out - target).abs(), nan=math.inf).max())

    errors = [misfit(float(c)) for c in SEARCH]
    best = min(range(len(errors)), key=errors.__getitem__)
    low, high = math.log(SEARCH[max(best - 1, 0)]), math.log(SEARCH[min(best + 1, len(SEARCH) - 1)])
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        a, b = high - ratio * (high - low), low + ratio * (high - low)
        if misfit(math.exp(a)) < misfit(math.exp(b)):
            high = b
        else:
            low = a
    factor = math.exp((low + high) / 2)
    out = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal, scale=1 / factor)
    return factor if _close(target, out) else None


def named(outcome, found: ScaleFinding | None):
    """The failed outcome (zh, en, mistakes) with the factor named; unchanged when none was found."""
    if found is not None:
        outcome.zh, outcome.en, outcome.mistakes = f"{outcome.zh}{found.zh}", f"{outcome.en} {found.en}", [found.mistake]
    return outcome


def _close(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    atol, rtol = REPRODUCES
    return bool(torch.allclose(actual, expected, atol=atol, rtol=rtol, equal_nan=True))
