# style: torch.einsum everywhere, torch.where(mask, scores, -inf), torch.softmax, bool buffer from .bool()
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    """Q, K: (..., T, d_k), V: (..., T, d_v)"""
    d_k = Q.shape[-1]
    T = Q.shape[-2]
    scores = torch.einsum("...id,...jd->...ij", Q, K) / math.sqrt(d_k)
    if is_causal:
        allowed = torch.ones(T, T, dtype=torch.bool, device=scores.device).tril()
        scores = torch.where(allowed, scores, torch.tensor(float("-inf"), device=scores.device, dtype=scores.dtype))
    weights = torch.softmax(scores, dim=-1)
    out = torch.einsum("...ij,...jd->...id", weights, V)
    return out, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.h = args.n_heads
        self.d = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("causal", torch.tril(torch.ones(L, L)).bool())

    def forward(self, q, k, v):
        B, T, _ = q.shape
        # (B, T, H, d) -- keep heads as an explicit axis and let einsum do the bookkeeping
        Q = self.wq(q).view(B, T, self.h, self.d)
        K = self.wk(k).view(B, T, self.h, self.d)
        V = self.wv(v).view(B, T, self.h, self.d)
        scores = torch.einsum("bihd,bjhd->bhij", Q, K) / math.sqrt(self.d)
        if self.is_causal:
            m = self.causal[:T, :T]
            scores = torch.where(m, scores, torch.full_like(scores, float("-inf")))
        att = torch.softmax(scores, dim=-1)
        att = self.attn_dropout(att)
        out = torch.einsum("bhij,bjhd->bihd", att, V).reshape(B, T, self.h * self.d)
        return self.resid_dropout(self.wo(out))
