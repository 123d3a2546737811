# seen in: a fork of stanford-cs336/assignment1-basics (the code index named no repository): `softmax(attn_scores, d_k)`, the key width passed where the softmax wants its axis
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from einops import einsum


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def softmax(x, dim):
    ex = (x - x.max(dim=dim, keepdim=True).values).exp()
    return ex / ex.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = True):
    d_k = k.size(-1)
    attn_scores = einsum(q, k, "... queries d_k, ... keys d_k -> ... queries keys")
    attn_scores = attn_scores / torch.sqrt(torch.tensor(d_k, dtype=q.dtype))
    if is_causal:
        n = q.shape[-2]
        attn_scores = attn_scores.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), -math.inf)
    attn_scores = softmax(attn_scores, d_k)  # the size, not the axis
    return einsum(attn_scores, v, "... queries keys, ... keys d_v -> ... queries d_v"), attn_scores


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("keep", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril())

    def forward(self, q, k, v):
        b, n, d = q.shape
        q, k, v = (w(x).view(b, n, self.h, -1).transpose(1, 2) for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        scores = einsum(q, k, "... queries d_k, ... keys d_k -> ... queries keys") / math.sqrt(q.size(-1))
        if self.is_causal:
            scores = scores.masked_fill(~self.keep[:n, :n], -math.inf)
        scores = self.attn_dropout(softmax(scores, -1))
        out = einsum(scores, v, "... queries keys, ... keys d_v -> ... queries d_v")
        return self.resid_dropout(self.wo(out.transpose(1, 2).contiguous().view(b, n, d)))
