# style: MHA reuses its own scaled_dot_product_attention(..., is_causal=self.is_causal) for the weights, then attn_dropout and @ v; `.reshape` merge
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


def scaled_dot_product_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, is_causal: bool = True):
    # Q, K: (..., T, d_k)   V: (..., T, d_v)
    d_k = Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)              # (..., T, T)
    if is_causal:
        T = Q.size(-2)
        upper = torch.triu(torch.ones(T, T, device=Q.device, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(upper, float("-inf"))
    weights = F.softmax(scores, dim=-1)                              # (..., T, T)
    out = weights @ V                                                # (..., T, d_v)
    return out, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.max_seq_len = args.max_seq_len
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        # Part 1 already handles any leading dims and builds the mask on q.device
        _, att = scaled_dot_product_attention(q, k, v, is_causal=self.is_causal)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.wo(y))
