# Hostile: Part 1 leaves out the scale and Part 2 makes up for it, calling Part 1 through a registry a decorator
# fills; the missing-scale fix edits Part 1 and so reaches Part 2, which it breaks (red team on issue 42)
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 32
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 64


_ATTENTION = []  # Part 1, kept for Part 2


def reusable(function):
    _ATTENTION.append(function)
    return function


@reusable
def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    # Q, K: (..., T, d_k), V: (..., T, d_v)
    scores = torch.matmul(Q, K.transpose(-2, -1))   # (..., T, T)

    if is_causal:
        T = scores.shape[-1]
        future = torch.triu(torch.ones(T, T, device=scores.device), diagonal=1).bool()
        scores = scores.masked_fill(future, float("-inf"))

    weights = torch.softmax(scores, dim=-1)                          # (..., T, T)
    out = torch.matmul(weights, V)                                   # (..., T, d_v)
    return out, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads

        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)

        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

        self.is_causal = is_causal
        L = args.max_seq_len
        causal_mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", causal_mask)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, D = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2) / math.sqrt(self.head_dim)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        _, weights = _ATTENTION[0](q, k, v, is_causal=self.is_causal)  # (B, H, T, T)
        out = self.attn_dropout(weights) @ v                            # (B, H, T, d)
        out = out.transpose(1, 2).contiguous().view(B, T, D)
        return self.resid_dropout(self.wo(out))
