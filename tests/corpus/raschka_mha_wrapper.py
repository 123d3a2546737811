# seen in: rasbt/LLMs-from-scratch (ch03, MultiHeadAttentionWrapper and CausalAttention): one causal attention module per head, run in a Python list comprehension and concatenated, the mask applied in place with masked_fill_ and -torch.inf
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(queries, keys, values, is_causal: bool = True):
    tokens = queries.shape[-2]
    scores = queries @ keys.transpose(-2, -1)
    if is_causal:
        above = torch.ones(tokens, tokens, device=queries.device).triu(diagonal=1)
        scores = scores.masked_fill(above.bool(), -torch.inf)
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values, weights


class OneHead(nn.Module):
    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.dropout = dropout
        self.is_causal = is_causal
        self.register_buffer("above", torch.ones(block_size, block_size).triu(diagonal=1))

    def forward(self, queries, keys, values):
        tokens = queries.shape[1]
        scores = queries @ keys.transpose(1, 2)
        if self.is_causal:
            scores.masked_fill_(self.above.bool()[:tokens, :tokens], -torch.inf)
        weights = self.dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))
        return weights @ values


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList([OneHead(args.max_seq_len, self.attn_dropout, is_causal)
                                    for _ in range(args.n_heads)])

    def forward(self, q, k, v):
        queries, keys, values = self.wq(q), self.wk(k), self.wv(v)
        d = self.head_dim
        context = torch.cat([head(queries[..., i * d:(i + 1) * d], keys[..., i * d:(i + 1) * d],
                                  values[..., i * d:(i + 1) * d]) for i, head in enumerate(self.heads)], dim=-1)
        return self.resid_dropout(self.wo(context))
