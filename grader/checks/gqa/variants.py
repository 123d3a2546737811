"""Which mistake GroupedQueryAttention's whole-prompt numbers show: the module computed in float64 with one
catalogued slip (or two or three at once), each matched against the student's output.

The attention step is lab 1's (`reference.attention`, with its mask, scale and softmax variants); the projections,
the key/value heads (`exercises.kv_cache.reference.repeat_kv`, tiled for `repeat-kv-order`) and the head split are
this lab's, since wk and wv have n_kv_heads heads.
"""
from __future__ import annotations

import math

import torch

from grader.checks import diagnosis, reference
from grader.exercises.kv_cache import reference as kv_reference

SPLITS = {"head-split": "qkv", "head-split-in": "qkv", "head-split-q": "q", "head-split-kv": "kv"}
"""Which of q, k, v each head-split variant views straight to (B, heads, T, d): all three (merged back wrong too, or
right: `-in`), or the queries or the keys and values alone (written on one line or on two)."""
VARIANTS = ("missing-scale", "wrong-scale", "wrong-scale-width", "wrong-scale-kv-width", "mask-diagonal", "mask-direction",
            "mask-multiplied",
            "mask-after-softmax", "mask-missing", "softmax-dim", "softmax-dim-heads", *SPLITS, "head-split-out",
            "missing-out-proj", "repeat-kv-order")
MISTAKE_OF = {**reference.MISTAKE_OF, "head-split-q": "head-split", "head-split-kv": "head-split",
              "wrong-scale-kv-width": "wrong-scale"}
"""`wrong-scale-kv-width`: the scores divided by √(n_kv_heads · head_dim), the width of wk's output (an independently
written bug of this lab, unnamed before)."""
INNER = frozenset(reference.SDPA_VARIANTS) | {"softmax-dim-heads"}
"""The variants of lab 1's attention step itself."""


def forward(x: torch.Tensor, weights: dict, n_heads: int, n_kv_heads: int, variant=None) -> torch.Tensor:
    """The whole-prompt pass (causal, no cache) in float64 with `variant`: one name of VARIANTS, a tuple, or None."""
    variants = reference.chosen(variant)
    x = x.double()
    B, T, C = x.shape  # batch, positions, model width
    d = C // n_heads  # head width
    straight = "".join(SPLITS.get(name, "") for name in variants)

    def heads(name: str, count: int) -> torch.Tensor:  # (B, count, T, d)
        projected = x @ weights[f"w{name}"].double().T  # (B, T, count * d)
        return projected.reshape(B, count, T, d) if name in straight else \
            projected.view(B, T, count, d).transpose(1, 2)

    n_rep, tile = n_heads // n_kv_heads, "repeat-kv-order" in variants
    q = heads("q", n_heads)
    k, v = (kv_reference.repeat_kv(heads(name, n_kv_heads), n_rep, tile=tile) for name in "kv")  # (B, H, T, d)
    scale = 1 / math.sqrt(C) if "wrong-scale-width" in variants else \
        1 / math.sqrt(n_kv_heads * d) if "wrong-scale-kv-width" in variants else None
    y, _ = reference.attention(q, k, v, True, variants & INNER, scale)  # (B, H, T, d)
    y = y.reshape(B, T, C) if variants & {"head-split", "head-split-out"} else y.transpose(1, 2).reshape(B, T, C)
    return y if "missing-out-proj" in variants else y @ weights["wo"].double().T


def mistakes(actual: torch.Tensor | None, x: torch.Tensor, weights: dict, n_heads: int, n_kv_heads: int) -> list[str]:
    """The catalog ids of the variant (or combination) whose numbers the student's reproduce; none where none does."""
    if actual is None:
        return []
    computed = {variant: forward(x, weights, n_heads, n_kv_heads, variant) for variant in VARIANTS}
    found = diagnosis.matching_variant(actual, computed)
    if found is None:  # two slips at once, each in another step of the computation (pairs: a triple search costs
        # seconds of the parent's CPU on every unexplained failure)
        found = diagnosis.matching_combination(actual, lambda combination: forward(x, weights, n_heads, n_kv_heads,
                                                                                    combination),
                                               reference.combinations(list(VARIANTS), largest=2))
    names = [] if found is None else [found] if isinstance(found, str) else list(found)
    return list(dict.fromkeys(MISTAKE_OF.get(name, name) for name in names))
