# seen in: harvardnlp/annotated-transformer (attention, subsequent_mask, MultiHeadedAttention): a (1, size, size) uint8 mask made on the CPU with no device=, compared == 0 and filled with -1e9, unsqueezed to share across heads
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def no_peeking(size):
    """True where a position may be seen: (1, size, size), on the CPU."""
    ahead = torch.ones((1, size, size)).triu(diagonal=1).type(torch.uint8)
    return ahead == 0


def attention(query, key, value, mask=None, dropout=None):
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    probs = scores.softmax(dim=-1)
    if dropout is not None:
        probs = dropout(probs)
    return torch.matmul(probs, value), probs


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    return attention(Q, K, V, mask=no_peeking(Q.size(-2)) if is_causal else None)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        assert args.dim % args.n_heads == 0
        self.d_k = args.dim // args.n_heads
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(p=args.dropout)
        self.resid_dropout = nn.Dropout(p=args.dropout)
        self.is_causal = is_causal
        self.attn = None

    def forward(self, query, key, value):
        mask = no_peeking(query.size(1)).unsqueeze(1) if self.is_causal else None  # one mask for every head
        batches = query.size(0)
        query, key, value = [proj(x).view(batches, -1, self.h, self.d_k).transpose(1, 2)
                             for proj, x in zip((self.wq, self.wk, self.wv), (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.attn_dropout)
        x = x.transpose(1, 2).contiguous().view(batches, -1, self.h * self.d_k)
        return self.resid_dropout(self.wo(x))
