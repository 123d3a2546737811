# seen in: rasbt/LLMs-from-scratch (ch03 bonus notebook, MultiHeadAttentionCombinedQKV, before the fix of #858): softmax(scores / keys.shape[-1] ** -0.5), dividing by 1/sqrt(d), i.e. multiplying by sqrt(d); q, k, v taken from one concatenated tensor by view + permute + unbind
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
    weights = torch.softmax(scores / keys.shape[-1] ** -0.5, dim=-1)  # the exponent's sign flipped
    return weights @ values, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "the width must split across the heads"
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
        b, tokens, width = q.shape
        qkv = torch.cat((self.wq(q), self.wk(k), self.wv(v)), dim=-1)  # (b, tokens, 3 * width)
        qkv = qkv.view(b, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # (3, b, heads, tokens, d)
        queries, keys, values = qkv.unbind(0)
        scores = queries @ keys.transpose(-2, -1)
        if self.is_causal:
            scores = scores.masked_fill(self.above.bool()[:tokens, :tokens], -torch.inf)
        weights = self.attn_dropout(torch.softmax(scores / keys.shape[-1] ** -0.5, dim=-1))
        context = (weights @ values).transpose(1, 2).contiguous().view(b, tokens, width)
        return self.resid_dropout(self.wo(context))
