# einsum with `...` for any number of leading dims, (T, d) included; the module reuses that style.
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
    d_k = Q.size(-1)
    scores = torch.einsum("...nd,...md->...nm", Q, K) / math.sqrt(d_k)
    if is_causal:
        T = Q.size(-2)
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.einsum("...nm,...md->...nd", weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, D = q.shape
        split = lambda x: x.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2)
        q, k, v = split(self.wq(q)), split(self.wk(k)), split(self.wv(v))
        d_k = q.size(-1)
        scores = torch.einsum("...nd,...md->...nm", q, k) / math.sqrt(d_k)
        if self.is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        y = self.attn_dropout(scores.softmax(dim=-1)) @ v
        return self.resid_dropout(self.wo(y.transpose(1, 2).reshape(B, T, D)))
