# seen in: Gyakobo/local_language_model (Head.py, MultiHeadAttention.py; a take on the "Let's build GPT" lecture): Part 1 unpacks `B, T, C = x.shape` (3-D only); Part 2 runs one Head per head in a list comprehension, each scaled by C**-0.5 with C the model width
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
    B, T, C = q.shape  # exactly three dims
    aff = q @ k.transpose(-2, -1) * C ** -0.5
    if is_causal:
        lower = torch.ones(T, T, device=q.device).tril()
        aff = aff.masked_fill(lower == 0, float("-inf"))
    aff = F.softmax(aff, dim=-1)
    return aff @ v, aff


class Head(nn.Module):
    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.register_buffer("lower", torch.ones(block_size, block_size).tril())
        self.dropout = dropout
        self.is_causal = is_causal

    def forward(self, x, q, k, v):
        B, T, C = x.shape  # C: the width of the module's input
        aff = q @ k.transpose(-2, -1) * C ** -0.5
        if self.is_causal:
            aff = aff.masked_fill(self.lower[:T, :T] == 0, float("-inf"))
        return self.dropout(F.softmax(aff, dim=-1)) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.size = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList([Head(args.max_seq_len, self.attn_dropout, is_causal) for _ in range(args.n_heads)])

    def forward(self, q, k, v):
        x, s = q, self.size
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        outs = [h(x, q[..., i * s:(i + 1) * s], k[..., i * s:(i + 1) * s], v[..., i * s:(i + 1) * s])
                for i, h in enumerate(self.heads)]
        return self.resid_dropout(self.wo(torch.cat(outs, dim=-1)))
