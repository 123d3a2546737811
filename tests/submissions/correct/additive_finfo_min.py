# style: additive masks filled with torch.finfo(...).min instead of -inf (SDPA per call in scores.dtype; MHA float buffer), self.scale = head_dim ** -0.5
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 96
    n_heads: int = 6
    dropout: float = 0.0
    max_seq_len: int = 200


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(K.shape[-1])
    if is_causal:
        T = scores.shape[-1]
        big_negative = torch.finfo(scores.dtype).min
        bias = torch.full((T, T), big_negative, dtype=scores.dtype, device=scores.device).triu(1)
        scores = scores + bias
    weights = scores.softmax(dim=-1)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.scale = self.head_dim ** -0.5
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        L = args.max_seq_len
        bias = torch.full((1, 1, L, L), torch.finfo(torch.float32).min).triu(diagonal=1)
        self.register_buffer("attn_bias", bias)

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        if self.is_causal:
            att = att + self.attn_bias[:, :, :T, :T]
        att = self.attn_dropout(att.softmax(dim=-1))
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
