# seen in: d2l-ai/d2l-zh and d2l-en (DotProductAttention, transpose_qkv): torch.bmm with keys.transpose(1, 2), 3-D tensors only, heads folded into the batch in Part 2, masked entries filled with -1e6
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(queries, keys, values, is_causal: bool = True):
    scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(queries.shape[-1])  # (batch, n, n)
    if is_causal:
        n = scores.shape[-1]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1), -1e6)
    weights = nn.functional.softmax(scores, dim=-1)
    return torch.bmm(weights, values), weights


def fold_heads(x, heads):
    """(batch, n, heads * d) -> (batch * heads, n, d)."""
    x = x.reshape(x.shape[0], x.shape[1], heads, -1).permute(0, 2, 1, 3)
    return x.reshape(-1, x.shape[2], x.shape[3])


def unfold_heads(x, heads):
    """(batch * heads, n, d) -> (batch, n, heads * d)."""
    x = x.reshape(-1, heads, x.shape[1], x.shape[2]).permute(0, 2, 1, 3)
    return x.reshape(x.shape[0], x.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        self.heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("ahead", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, queries, keys, values):
        q, k, v = (fold_heads(f(x), self.heads) for f, x in ((self.wq, queries), (self.wk, keys), (self.wv, values)))
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        if self.is_causal:
            n = scores.shape[-1]
            scores = scores.masked_fill(self.ahead[:n, :n], -1e6)
        weights = self.attn_dropout(nn.functional.softmax(scores, dim=-1))
        return self.resid_dropout(self.wo(unfold_heads(torch.bmm(weights, v), self.heads)))
