# Not forged: honest code whose answer is too large to check. Part 1 adds a module-level table of 5 M floats
# (20 MB, read whole, not sliced) times zero; the worker says so instead of writing a frame over the cap.
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

TABLE = torch.zeros(5_000_000)


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    length = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        above = torch.ones(length, length, dtype=torch.bool, device=Q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    weights = F.softmax(scores, dim=-1) + TABLE.to(Q.device).sum().to(Q.dtype) * 0
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
        self.register_buffer("mask", torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")).triu(1))

    def forward(self, q, k, v):
        batch, length, dim = q.shape
        q, k, v = (w(x).view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)
                   for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores + self.mask[:, :, :length, :length]
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        mixed = (weights @ v).transpose(1, 2).contiguous().view(batch, length, dim)
        return self.resid_dropout(self.wo(mixed))
