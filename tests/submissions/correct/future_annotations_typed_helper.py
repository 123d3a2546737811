# style: from __future__ import annotations, a typed helper that takes the projection, a float mask buffer from ones
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def split_heads(project: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, C = x.shape
    return project(x).view(B, T, n_heads, C // n_heads).transpose(1, 2)  # (B, H, T, d)


def scaled_dot_product_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                                 is_causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        lower = torch.ones(T, T, device=Q.device).tril()
        scores = scores.masked_fill(lower == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False) -> None:
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("lower", torch.ones(args.max_seq_len, args.max_seq_len).tril())

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, C = q.shape
        q, k, v = (split_heads(w, x, self.n_heads) for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        att = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if self.is_causal:
            att = att.masked_fill(self.lower[:T, :T] == 0, float("-inf"))
        y = self.attn_dropout(F.softmax(att, dim=-1)) @ v
        return self.resid_dropout(self.wo(y.transpose(1, 2).contiguous().view(B, T, C)))
