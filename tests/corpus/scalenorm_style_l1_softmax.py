# seen in: ScaleNorm-style code that reaches for norms: a hand-written softmax dividing by the row's L1 norm (torch.linalg.vector_norm, ord=1) after subtracting the row's amax
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


def normalised(scores):
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / torch.linalg.vector_norm(e, ord=1, dim=-1, keepdim=True)


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = normalised(scores)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
        self.is_causal = is_causal

    def _heads(self, x):
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)

    def _merge(self, y):
        B, H, T, d = y.shape
        return y.transpose(1, 2).contiguous().view(B, T, H * d)
    def forward(self, q, k, v):
        q, k, v = self._heads(self.wq(q)), self._heads(self.wk(k)), self._heads(self.wv(v))
        T = q.size(-2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        weights = self.attn_dropout(normalised(scores))
        return self.resid_dropout(self.wo(self._merge(weights @ v)))
