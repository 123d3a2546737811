# style: products through the operator module (`operator.matmul`, `from operator import matmul`)
import math
import operator
from operator import matmul
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
    T, d_k = Q.shape[-2], Q.shape[-1]
    scores = operator.truediv(matmul(Q, K.transpose(-2, -1)), math.sqrt(d_k))
    if is_causal:
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=Q.device), diagonal=1)
        scores = scores.masked_fill(future, -math.inf)
    weights = F.softmax(scores, dim=-1)
    return operator.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
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
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")).triu(1)
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if self.is_causal:
            att = att + self.mask[:, :, :T, :T]
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
