# seen in: Tialo/nlp-milestones-from-scratch (models.py, ScaledDotProductAttention): `k.transpose(1, 2)` in Part 1, right only for (batch, seq, d) input
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    # expects q, k, v of shape (batch, seq, width)
    width = k.shape[-1]
    att = q @ k.transpose(1, 2) / width ** 0.5  # (batch, seq, seq)
    if is_causal:
        n = q.shape[-2]
        ahead = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(diagonal=1)
        att = att.masked_fill(ahead, float("-inf"))
    att = att.softmax(dim=-1)
    return att @ v, att


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        ahead = torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(diagonal=1)
        self.register_buffer("ahead", ahead)

    def forward(self, q, k, v):
        batch, seq, width = q.shape
        heads = lambda x: x.view(batch, seq, self.n_heads, -1).transpose(1, 2)  # noqa: E731  (batch, heads, seq, d)
        q, k, v = heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v))
        att = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if self.is_causal:
            att = att.masked_fill(self.ahead[:seq, :seq], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        out = (att @ v).transpose(1, 2).reshape(batch, seq, width)
        return self.resid_dropout(self.wo(out))
