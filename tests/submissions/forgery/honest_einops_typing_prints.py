# Honest: einops, typing, asserts, prints (also to stderr), torch.finfo, einsum, math.sqrt, getattr on self.
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange
from torch import Tensor


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256
    notes: list = field(default_factory=list)

    def __post_init__(self):
        assert self.dim % self.n_heads == 0, f"dim {self.dim} must be divisible by n_heads {self.n_heads}"


def scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor, is_causal: bool = True) -> Tuple[Tensor, Tensor]:
    """Weights: softmax over keys; the device follows Q (works on cuda and cpu alike)."""
    assert Q.dim() >= 2 and Q.shape[-1] == K.shape[-1], "Q and K must share d_k"
    T, d_k = Q.size(-2), Q.size(-1)
    scores = torch.einsum("...id,...jd->...ij", Q, K) / math.sqrt(d_k)
    if is_causal:
        keep = torch.tril(torch.ones(T, T, device=Q.device, dtype=torch.bool))
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    weights = F.softmax(scores.float(), dim=-1).to(Q.dtype)
    if not torch.isfinite(weights).all():
        print("non-finite weights", tuple(weights.shape), file=sys.stderr)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False) -> None:
        super().__init__()
        self.n_heads = args.n_heads
        for name in ("wq", "wk", "wv", "wo"):
            setattr_free = nn.Linear(args.dim, args.dim, bias=False)
            self.add_module(name, setattr_free)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)).bool(), persistent=False)
        self.scale: Optional[float] = None

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, T, C = q.shape
        h = self.n_heads
        q, k, v = (rearrange(getattr(self, name)(x), "b t (h d) -> b h t d", h=h)
                   for name, x in (("wq", q), ("wk", k), ("wv", v)))
        att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.size(-1)))
        if self.is_causal:
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = rearrange(att @ v, "b h t d -> b t (h d)")
        assert y.shape == (B, T, C), (y.shape, np.prod(y.shape))
        return self.resid_dropout(self.wo(y))
