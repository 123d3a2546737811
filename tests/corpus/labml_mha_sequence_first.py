# seen in: labmlai/annotated_deep_learning_paper_implementations (labml_nn/transformers/mha.py): sequence-first tensors, `seq_len, batch_size, _ = query.shape`, einsum 'ibhd,jbhd->ijbh' and softmax(dim=1); fed batch-first input it attends across the batch, never across time; masks filled with -1e9
import math
from dataclasses import dataclass

import torch
from torch import nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def lower_triangle(n):
    """(n, n, 1) bool: key j visible from query i when j <= i (a trailing axis for the batch)."""
    return torch.ones(n, n).tril().to(torch.bool).unsqueeze(-1)


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scores = torch.einsum("...id,...jd->...ij", query, key) / math.sqrt(query.shape[-1])
    if is_causal:
        seen = lower_triangle(query.shape[-2]).to(query.device)[..., 0]
        scores = scores.masked_fill(seen == 0, -1e9)
    attn = F.softmax(scores, dim=-1)
    return torch.einsum("...ij,...jd->...id", attn, value), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        self.d_k = args.dim // args.n_heads
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, self.heads * self.d_k, bias=False)
        self.wk = nn.Linear(args.dim, self.heads * self.d_k, bias=False)
        self.wv = nn.Linear(args.dim, self.heads * self.d_k, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.scale = 1 / math.sqrt(self.d_k)

    def forward(self, q, k, v):
        seq_len, batch_size, _ = q.shape  # read sequence-first: [seq_len, batch_size, d_model]
        seen = lower_triangle(seq_len).to(q.device).unsqueeze(-1) if self.is_causal else None
        query, key, value = (w(x).view(seq_len, batch_size, self.heads, self.d_k)
                             for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        scores = torch.einsum("ibhd,jbhd->ijbh", query, key) * self.scale
        if seen is not None:
            scores = scores.masked_fill(seen == 0, -1e9)
        attn = self.attn_dropout(F.softmax(scores, dim=1))
        x = torch.einsum("ijbh,jbhd->ibhd", attn, value).reshape(seq_len, batch_size, -1)
        return self.resid_dropout(self.wo(x))
