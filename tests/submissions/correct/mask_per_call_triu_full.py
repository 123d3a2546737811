# style: an additive mask built per call with torch.full(-inf).triu(1) on the input's device; permute and reshape
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def causal_bias(T, device, dtype):
    return torch.full((T, T), float("-inf"), device=device, dtype=dtype).triu(1)


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scores = Q @ K.mT / math.sqrt(K.shape[-1])
    if is_causal:
        scores = scores + causal_bias(Q.shape[-2], Q.device, scores.dtype)
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).reshape(B, T, self.heads, -1).permute(0, 2, 1, 3)  # (B, H, T, d)
        k = self.wk(k).reshape(B, T, self.heads, -1).permute(0, 2, 1, 3)
        v = self.wv(v).reshape(B, T, self.heads, -1).permute(0, 2, 1, 3)
        att = q @ k.mT / math.sqrt(q.shape[-1])
        if self.is_causal:
            att = att + causal_bias(T, q.device, att.dtype)
        y = self.attn_dropout(att.softmax(-1)) @ v
        return self.resid_dropout(self.wo(y.permute(0, 2, 1, 3).reshape(B, T, C)))
