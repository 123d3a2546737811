# seen in: rasbt/LLMs-from-scratch (ch03, CausalAttention): keys.transpose(1, 2), right only with exactly one leading batch dim, an in-place masked_fill_ with -torch.inf, the scores divided by keys.shape[-1] ** 0.5 inside the softmax call
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
    scores = queries @ keys.transpose(1, 2)  # one batch dim assumed
    if is_causal:
        scores.masked_fill_(torch.ones(tokens, tokens, device=queries.device).triu(diagonal=1).bool(), -torch.inf)
    weights = torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1)
    return weights @ values, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "the output width must split across the heads"
        self.d_out = args.dim
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("above", torch.ones(args.max_seq_len, args.max_seq_len).triu(diagonal=1))

    def forward(self, q, k, v):
        b, tokens, _ = q.shape
        queries, keys, values = (t.view(b, tokens, self.num_heads, self.head_dim).transpose(1, 2)
                                 for t in (self.wq(q), self.wk(k), self.wv(v)))
        scores = queries @ keys.transpose(2, 3)
        if self.is_causal:
            scores.masked_fill_(self.above.bool()[:tokens, :tokens], -torch.inf)
        weights = self.attn_dropout(torch.softmax(scores / keys.shape[-1] ** 0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).contiguous().view(b, tokens, self.d_out)
        return self.resid_dropout(self.wo(context))
