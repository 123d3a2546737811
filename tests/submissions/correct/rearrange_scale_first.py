# style: einops rearrange for the heads, q pre-scaled before the product, the max subtracted by hand before exp
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from einops import rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def softmax_rows(x):
    x = x - x.max(dim=-1, keepdim=True).values
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scores = (Q * Q.shape[-1] ** -0.5) @ K.transpose(-2, -1)
    if is_causal:
        T = Q.shape[-2]
        scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=Q.device), diagonal=1),
                                    float("-inf"))
    weights = softmax_rows(scores)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("blocked", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, q, k, v):
        T = q.shape[1]
        q, k, v = (rearrange(w(x), "b t (h d) -> b h t d", h=self.h) for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        att = (q * q.shape[-1] ** -0.5) @ k.transpose(-2, -1)  # (b, h, t, t)
        if self.is_causal:
            att = att.masked_fill(self.blocked[:T, :T], float("-inf"))
        y = self.attn_dropout(softmax_rows(att)) @ v
        return self.resid_dropout(self.wo(rearrange(y, "b h t d -> b t (h d)")))
