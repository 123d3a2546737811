# style: `from __future__ import annotations`, so a classmethod names its own class, unquoted, before it exists
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                                 is_causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    T, d_k = Q.size(-2), Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


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
        future = torch.full((args.max_seq_len, args.max_seq_len), float("-inf")).triu(1)
        self.register_buffer("mask", future)

    @classmethod
    def causal(cls, args: ModelArgs) -> MultiHeadAttention:
        return cls(args, is_causal=True)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, C = q.shape
        q, k, v = self.split(self.wq(q)), self.split(self.wk(k)), self.split(self.wv(v))
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            att = att + self.mask[:T, :T]
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.wo(y))
