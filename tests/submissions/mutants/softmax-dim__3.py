# expect: softmax-dim
# part: sdpa
# Written for (T, d) inputs (transpose(0, 1)), and the softmax runs over dim=0, the queries: at the rank the code
# accepts the softmax bug is named, not hidden behind hardcoded-dims.
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
    T, d_k = Q.size(0), Q.size(1)
    scores = torch.matmul(Q, K.transpose(0, 1)) / math.sqrt(d_k)
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, device=Q.device).triu(1).bool(), float("-inf"))
    weights = torch.softmax(scores, dim=0)
    return torch.matmul(weights, V), weights


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
        L = args.max_seq_len
        self.register_buffer("causal_mask", torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, T, D = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            att = att.masked_fill(self.causal_mask[:T, :T], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        return self.resid_dropout(self.wo(y))
