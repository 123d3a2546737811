# style: einsum with '...' in both parts, the scale from numpy, heads by unflatten/flatten, masked_fill_ in place
import math
from dataclasses import dataclass

import numpy as np
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
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])
    if is_causal:
        T = scores.shape[-1]
        scores.masked_fill_(torch.ones(T, T, device=Q.device, dtype=torch.bool).triu(diagonal=1), -np.inf)
    weights = scores.softmax(-1)
    return torch.einsum("...qk,...kd->...qd", weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("future", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        T = q.shape[1]
        heads = lambda x: x.unflatten(-1, (self.n_heads, -1)).transpose(1, 2)  # noqa: E731  (B, H, T, d)
        q, k, v = heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v))
        att = torch.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])
        if self.is_causal:
            att = att.masked_fill(self.future[:T, :T], -np.inf)
        att = self.attn_dropout(att.softmax(dim=-1))
        y = torch.einsum("...ij,...jd->...id", att, v).transpose(1, 2).flatten(-2)  # (B, T, C)
        return self.resid_dropout(self.wo(y))
