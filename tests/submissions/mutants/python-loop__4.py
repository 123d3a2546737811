# expect: python-loop
# part: mha
# Two bugs: the module loops over heads in Python and forgets the 1/sqrt(head_dim) scale.
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


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    T, d_k = Q.size(-2), Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = scores.softmax(dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, D = q.shape
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        heads = []
        for h in range(self.n_heads):
            cols = slice(h * self.head_dim, (h + 1) * self.head_dim)
            att = q[..., cols] @ k[..., cols].transpose(-2, -1)
            if self.is_causal:
                att = att.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
            heads.append(self.attn_dropout(att.softmax(dim=-1)) @ v[..., cols])
        return self.resid_dropout(self.wo(torch.cat(heads, dim=-1)))
