# style: heads flattened into the batch, torch.baddbmm with an additive -inf mask and alpha=scale
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


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    *lead, T, d = Q.shape
    q, k, v = Q.reshape(-1, T, d), K.reshape(-1, T, d), V.reshape(-1, T, V.size(-1))
    bias = torch.zeros(T, T, dtype=Q.dtype, device=Q.device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    scores = torch.baddbmm(bias.expand(q.size(0), T, T), q, k.transpose(1, 2), alpha=1.0 / math.sqrt(d))
    weights = torch.softmax(scores, dim=-1)
    out = torch.bmm(weights, v)
    return out.reshape(*lead, T, V.size(-1)), weights.reshape(*lead, T, T)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.h = args.n_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(args.dim, args.dim, bias=False) for _ in range(4))
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("causal_bias", torch.full((L, L), float("-inf")).triu(1), persistent=False)

    def forward(self, q, k, v):
        B, T, C = q.shape
        d = C // self.h
        split = lambda x: x.view(B, T, self.h, d).transpose(1, 2).reshape(B * self.h, T, d)  # noqa: E731  (B*H, T, d)
        q, k, v = split(self.wq(q)), split(self.wk(k)), split(self.wv(v))
        bias = self.causal_bias[:T, :T] if self.is_causal else q.new_zeros(T, T)
        att = torch.baddbmm(bias.expand(B * self.h, T, T), q, k.transpose(1, 2), alpha=d ** -0.5)  # (B*H, T, T)
        att = self.attn_dropout(att.softmax(dim=-1))
        y = torch.bmm(att, v).view(B, self.h, T, d).transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.resid_dropout(self.wo(y))
