# seen in: awslabs/slapo (docs tutorial "Optimize Attention Module on A Single Device"): `torch.sqrt(d_k)` on a Python int (a TypeError), behind it `F.dropout(probs, 0.1)` that also drops in eval(), and Part 2's permute/view results thrown away, so heads are never merged
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


def attend(q, k, v, is_causal=True):
    d_k = q.shape[-1]  # a Python int
    logits = torch.matmul(q, k.transpose(-2, -1)) / torch.sqrt(d_k)
    if is_causal:
        n = q.shape[-2]
        logits = logits.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    probs = F.dropout(F.softmax(logits, dim=-1), 0.1)  # training defaults to True
    return torch.matmul(probs, v), probs


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    return attend(Q, K, V, is_causal)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_heads = args.n_heads
        self.is_causal = is_causal

    def heads_first(self, x):
        return x.view(x.shape[:-1] + (self.n_heads, -1)).permute(0, 2, 1, 3)  # (batch, heads, n, d)

    def forward(self, q, k, v):
        out, _ = attend(self.heads_first(self.wq(q)), self.heads_first(self.wk(k)), self.heads_first(self.wv(v)),
                        self.is_causal)
        out.permute(0, 2, 1, 3)  # the result is dropped: heads stay where they are
        out.view(out.shape[0], out.shape[1], -1)
        return self.resid_dropout(self.wo(out))
