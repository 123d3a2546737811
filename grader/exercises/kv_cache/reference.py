"""The trusted float64 reference of the `kv_cache` lab, torch only: what a student's `repeat_kv`, `KVCache` and
`GroupedQueryAttention` must compute, written functionally (no module, no state, nothing edited in place).

Besides the right computation, each function can compute one named mistake (keyword flags, off by default), so a
diagnosis can say "your output is what this mistake gives": `tile=True` (`repeat-kv-order`), `offset_mask=False`
(`cache-mask-offset`), `scale_by="dim"` (`wrong-scale`) and `scale_by="one"` (`missing-scale`).
"""
from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
from torch import Tensor

LAYERS = ("wq", "wk", "wv", "wo")
"""The projections' names, as `GroupedQueryAttention` holds them (bias-free `nn.Linear` weights, `(out, in)`)."""


class GQAOutput(NamedTuple):
    y: Tensor  # (B, T, C)
    cache_k: Tensor | None  # (max_batch_size, H_kv, max_seq_len, d): a new tensor, the input cache untouched
    cache_v: Tensor | None


def repeat_kv(x: Tensor, n_rep: int, *, tile: bool = False) -> Tensor:
    """(B, H_kv, T, d) -> (B, H_kv * n_rep, T, d): output head h is input head h // n_rep, so each group of n_rep
    consecutive query heads shares one key/value head. `tile=True`: head h % H_kv, the groups mixed up."""
    B, H_kv, T, d = x.shape  # batch, key/value heads, positions, head width
    if tile:
        return x.repeat(1, n_rep, 1, 1)  # (B, n_rep * H_kv, T, d)
    grouped = x[:, :, None].expand(B, H_kv, n_rep, T, d)  # (B, H_kv, n_rep, T, d)
    return grouped.reshape(B, H_kv * n_rep, T, d)  # (B, H, T, d)


def attend(q: Tensor, keys: Tensor, values: Tensor, start_pos: int, *, scale: float | None = None,
           offset_mask: bool = True, sees_itself: bool = True) -> tuple[Tensor, Tensor]:
    """Causal attention of T queries at absolute positions start_pos .. start_pos + T - 1 over S keys at 0 .. S - 1.

    q: (..., T, d); keys, values: (..., S, d). Query i sees key j iff j <= start_pos + i; the weights of the keys
    it cannot see are exactly 0. `scale` multiplies the scores (default 1 / √d). `offset_mask=False`: query i sees
    key j iff j <= i, the mask a student gets by forgetting start_pos; `sees_itself=False`: the diagonal hidden too
    (`mask-diagonal`). Returns out (..., T, d), weights (..., T, S).
    """
    T, S, d = q.size(-2), keys.size(-2), q.size(-1)
    scores = (q @ keys.transpose(-2, -1)) * (1 / math.sqrt(d) if scale is None else scale)  # (..., T, S)
    query_pos = torch.arange(T, device=q.device)[:, None] + (start_pos if offset_mask else 0)  # (T, 1)
    key_pos = torch.arange(S, device=q.device)[None, :]  # (1, S)
    scores = scores.masked_fill(key_pos > query_pos - (0 if sees_itself else 1), float("-inf"))  # (..., T, S)
    weights = torch.softmax(scores, dim=-1)  # (..., T, S)
    return weights @ values, weights  # (..., T, d), (..., T, S)


def written(cache: Tensor, start_pos: int, new: Tensor) -> Tensor:
    """A copy of `cache` (max_batch_size, H_kv, L, d) with `new` (B, H_kv, T, d) at rows :B, positions
    [start_pos, start_pos + T); `cache` itself is left as it was."""
    B, T = new.size(0), new.size(2)
    updated = cache.clone()
    updated[:B, :, start_pos:start_pos + T] = new
    return updated


def gqa_forward(x: Tensor, weights: dict[str, Tensor], n_heads: int, n_kv_heads: int,
                cache_k: Tensor | None = None, cache_v: Tensor | None = None, start_pos: int = 0, *,
                tile: bool = False, offset_mask: bool = True, sees_itself: bool = True,
                scale_by: Literal["head_dim", "dim", "kv_dim", "one"] = "head_dim") -> GQAOutput:
    """Grouped-query attention in float64: x (B, T, C) at positions start_pos .. start_pos + T - 1.

    `weights` maps wq, wk, wv, wo to their `(out, in)` matrices. With caches (both or neither), the new keys and
    values are written at [start_pos, start_pos + T) of copies, and the queries attend over the start_pos + T
    positions so far; the copies come back in the result. Without, start_pos must be 0.
    """
    assert n_heads % n_kv_heads == 0, "n_heads must be a multiple of n_kv_heads"
    assert (cache_k is None) == (cache_v is None), "both caches or neither"
    assert cache_k is not None or start_pos == 0, "without a cache there is nothing before position 0"
    x = x.double()
    wq, wk, wv, wo = (weights[name].double() for name in LAYERS)
    B, T, C = x.shape  # batch, positions, model width
    d = C // n_heads  # head width
    q = (x @ wq.T).view(B, T, n_heads, d).transpose(1, 2)  # (B, H, T, d)
    k = (x @ wk.T).view(B, T, n_kv_heads, d).transpose(1, 2)  # (B, H_kv, T, d)
    v = (x @ wv.T).view(B, T, n_kv_heads, d).transpose(1, 2)  # (B, H_kv, T, d)
    if cache_k is not None:
        cache_k, cache_v = written(cache_k.double(), start_pos, k), written(cache_v.double(), start_pos, v)
        k = cache_k[:B, :, :start_pos + T]  # (B, H_kv, S, d), S = start_pos + T
        v = cache_v[:B, :, :start_pos + T]  # (B, H_kv, S, d)
    n_rep = n_heads // n_kv_heads
    keys, values = repeat_kv(k, n_rep, tile=tile), repeat_kv(v, n_rep, tile=tile)  # (B, H, S, d)
    scale = {"head_dim": 1 / math.sqrt(d), "dim": 1 / math.sqrt(C), "kv_dim": 1 / math.sqrt(n_kv_heads * d),
             "one": 1.0}[scale_by]
    out, _ = attend(q, keys, values, start_pos, scale=scale, offset_mask=offset_mask,
                    sees_itself=sees_itself)  # (B, H, T, d)
    y = out.transpose(1, 2).reshape(B, T, n_heads * d) @ wo.T  # (B, T, C)
    return GQAOutput(y, cache_k, cache_v)
