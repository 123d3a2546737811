# seen in: phlippe/uvadlc_notebooks (UvA Deep Learning Tutorial 6, scaled_dot_product and MultiheadAttention): a float keep-mask compared with == 0 and filled with -9e15, a value float16 cannot hold, heads by reshape + permute
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def attend(q, k, v, keep=None):
    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size()[-1])
    if keep is not None:
        logits = logits.masked_fill(keep == 0, -9e15)
    weights = F.softmax(logits, dim=-1)
    return torch.matmul(weights, v), weights


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    n = q.size(-2)
    return attend(q, k, v, keep=torch.ones(n, n, device=q.device).tril() if is_causal else None)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "the width must split evenly across the heads"
        self.width = args.dim
        self.heads = args.n_heads
        self.head_width = args.dim // args.n_heads
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        batch, n, _ = q.size()
        keep = torch.ones(n, n, device=q.device).tril() if self.is_causal else None
        q, k, v = (w(x).reshape(batch, n, self.heads, self.head_width).permute(0, 2, 1, 3)
                   for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size()[-1])
        if keep is not None:
            logits = logits.masked_fill(keep == 0, -9e15)
        values = torch.matmul(self.attn_dropout(F.softmax(logits, dim=-1)), v)
        values = values.permute(0, 2, 1, 3).reshape(batch, n, self.width)  # (batch, n, heads * head_width)
        return self.resid_dropout(self.wo(values))
