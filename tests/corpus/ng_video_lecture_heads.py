# seen in: karpathy/ng-video-lecture (gpt.py, Head and MultiHeadAttention): one Head module per head, run in a list comprehension and concatenated, each head scaled by C**-0.5 with C the embedding width, not the head size
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    T, C = q.shape[-2:]
    aff = q @ k.transpose(-2, -1) * C ** -0.5
    if is_causal:
        lower = torch.ones(T, T, device=q.device).tril()
        aff = aff.masked_fill(lower == 0, float("-inf"))
    aff = F.softmax(aff, dim=-1)
    return aff @ v, aff


class Head(nn.Module):
    """One head: attends over its own slice of the shared projections."""

    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.register_buffer("lower", torch.ones(block_size, block_size).tril())
        self.dropout = dropout
        self.is_causal = is_causal

    def forward(self, x, q, k, v):
        B, T, C = x.shape  # C: the model width, used in the scale below
        aff = q @ k.transpose(-2, -1) * C ** -0.5  # (B, T, T)
        if self.is_causal:
            aff = aff.masked_fill(self.lower[:T, :T] == 0, float("-inf"))
        return self.dropout(F.softmax(aff, dim=-1)) @ v  # (B, T, head_size)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.head_size = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList(Head(args.max_seq_len, self.attn_dropout, is_causal) for _ in range(args.n_heads))

    def forward(self, q, k, v):
        x = q
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        s = self.head_size
        pieces = [head(x, q[..., i * s:(i + 1) * s], k[..., i * s:(i + 1) * s], v[..., i * s:(i + 1) * s])
                  for i, head in enumerate(self.heads)]
        return self.resid_dropout(self.wo(torch.cat(pieces, dim=-1)))
