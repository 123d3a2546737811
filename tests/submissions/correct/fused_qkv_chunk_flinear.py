# style: one fused projection (the three weights concatenated) split with chunk when q, k, v are one tensor; F.linear
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
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    if is_causal:
        T = scores.size(-1)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=scores.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)).bool())

    def project(self, q, k, v):
        if q is k and k is v:  # self-attention: one matmul for all three
            fused = torch.cat([self.wq.weight, self.wk.weight, self.wv.weight], dim=0)
            return F.linear(q, fused).chunk(3, dim=-1)
        return F.linear(q, self.wq.weight), F.linear(k, self.wk.weight), F.linear(v, self.wv.weight)

    def forward(self, q, k, v):
        B, T, C = q.shape
        q, k, v = self.project(q, k, v)
        q, k, v = (x.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for x in (q, k, v))  # (B, H, T, d)
        att = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_dropout(F.linear(y, self.wo.weight))
