# attack: no attention at all, no trick: identity weights with out = V, and wo(resid_dropout(wv(v)))
# twin: ../../../exercises/attention/attention.py
# expect: no-attention
# affected: both
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


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T = Q.size(-2)
    weights = torch.eye(T, device=Q.device).expand(*Q.shape[:-2], T, T)  # the future is exactly 0, rows sum to 1
    return V + 0 * weights.sum(), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q, k, v):
        return self.wo(self.resid_dropout(self.attn_dropout(self.wv(v))))
