# style: a Part 1 helper decorated with `@torch.jit.script` (a speed-up that changes no value); Part 2 does not use it
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


@torch.jit.script
def causal_softmax(scores: torch.Tensor) -> torch.Tensor:
    T = scores.size(-1)
    future = torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # (..., T, T)
    weights = causal_softmax(scores) if is_causal else torch.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
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
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")).triu(1)
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if self.is_causal:
            att = att + self.mask[:, :, :T, :T]
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
