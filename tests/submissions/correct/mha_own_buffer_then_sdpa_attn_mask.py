# style: SDPA takes an extra optional attn_mask; MHA passes its sliced additive -inf buffer and calls with is_causal=False
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


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True, attn_mask=None):
    """attn_mask (optional): additive mask broadcastable to (..., T, T)."""
    T, d_k = Q.shape[-2], Q.shape[-1]
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if attn_mask is not None:
        scores = scores + attn_mask
    if is_causal:
        causal = torch.triu(torch.full((T, T), float("-inf"), device=Q.device, dtype=scores.dtype), diagonal=1)
        scores = scores + causal
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1))

    def forward(self, q, k, v):
        bsz, seqlen, _ = q.shape
        xq = self.wq(q).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(k).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(v).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        m = self.mask[:, :, :seqlen, :seqlen] if self.is_causal else None
        _, scores = scaled_dot_product_attention(xq, xk, xv, is_causal=False, attn_mask=m)
        scores = self.attn_dropout(scores)
        out = torch.matmul(scores, xv)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(out))
