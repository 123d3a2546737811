# seen in: in-place masked writes on the scores (masked_fill_ in the function, a boolean-mask assignment, index_put_, in the module), as many tutorials write them
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
    T = Q.size(-2)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))
    if is_causal:
        scores.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch.matmul(weights, V), weights


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
            future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
            scores[..., future] = float("-inf")
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        return self.resid_dropout(self.wo(self._merge(weights @ v)))
