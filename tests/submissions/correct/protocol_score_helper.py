# style: a typing.Protocol names the shape of the scoring helper; the module asks for any object that fits it
import math
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


class ScoreFn(Protocol):
    def __call__(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor: ...


def scaled_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (..., T, T)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, score: ScoreFn = scaled_scores):
    T = q.size(-2)
    att = score(q, k)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        att = att.masked_fill(future, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ v, att


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    return attend(Q, K, V, is_causal)


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

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        score: ScoreFn = scaled_scores
        att = score(q, k)
        if self.is_causal:
            future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
            att = att.masked_fill(future, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.resid_dropout(self.wo(y))
