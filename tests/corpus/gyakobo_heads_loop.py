# source: Gyakobo/local_language_model, Head.py (class Head; stored commit c9f17b380092bd12771565e1f706d3a9af65ac03)
#   and MultiHeadAttention.py (stored commit aff62f20960e98f2f7ca81f3d0df8185f372ea8a), a student's take on the
#   "Let's build GPT" lecture
# url: https://github.com/Gyakobo/local_language_model
# licence: MIT (read in the repository's LICENSE: "MIT License, Copyright (c) 2024 Andrew")
# theirs: both parts. Part 1 is Head.forward's lines with q, k, v as arguments: `B, T, C = x.shape` unpacks exactly
#   three dims. Part 2 runs one Head per head in a Python list comprehension and concatenates; each head scales by
#   `C**-0.5` where C is the width of its input x (n_embd), not its head_size.
# adapted: Part 1: the tril buffer built on q's device, applied only when is_causal. Part 2: the globals n_embd and
#   block_size -> args.dim and args.max_seq_len; each Head owned key/query/value Linear(n_embd, head_size), here the
#   heads share wq/wk/wv (bias=False) and each takes its slice, so the reference weights load; proj -> wo
#   (bias=False; theirs has a bias); their code has no dropout: attn_dropout applied to each head's weights and
#   resid_dropout to the output; forward(x) -> (q, k, v); the mask applied only when causal.
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
    B, T, C = q.shape

    # Compute attention score ("affinities")
    wei = q @ k.transpose(-2, -1) * C**-0.5
    if is_causal:
        tril = torch.tril(torch.ones(T, T, device=q.device))
        wei = wei.masked_fill(tril[:T, :T] == 0, float('-inf'))
    wei = F.softmax(wei, dim=-1)

    # Perform the weightened aggregation of the values
    out = wei @ v
    return out, wei


class Head(nn.Module):
    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
        self.dropout = dropout
        self.is_causal = is_causal

    def forward(self, x, q, k, v):
        B, T, C = x.shape

        # Compute attention score ("affinities")
        wei = q @ k.transpose(-2, -1) * C**-0.5
        if self.is_causal:
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)

        # Perform the weightened aggregation of the values
        out = wei @ v
        return out


class MultiHeadAttention(nn.Module):
    # Multiple heads of self-attention in parallel
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.head_size = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList([Head(args.max_seq_len, self.attn_dropout, is_causal) for _ in range(args.n_heads)])
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        x = q
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        s = self.head_size
        out = torch.cat([h(x, q[..., i*s:(i+1)*s], k[..., i*s:(i+1)*s], v[..., i*s:(i+1)*s])
                         for i, h in enumerate(self.heads)], dim=-1)
        out = self.resid_dropout(self.wo(out))
        return out
