# style: a small helper class with __call__ (a `Scale` object) divides the scores by √d_k in both parts
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


class Scale:
    """Multiplies scores by 1/√d, the temperature of dot-product attention."""

    def __init__(self, head_dim: int):
        self.factor = 1.0 / math.sqrt(head_dim)

    def __call__(self, scores: torch.Tensor) -> torch.Tensor:
        return scores * self.factor

    def __repr__(self) -> str:
        return f"Scale({self.factor:.4f})"


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    T, d_k = Q.shape[-2:]
    scale = Scale(d_k)
    att = scale(Q @ K.transpose(-2, -1))
    if is_causal:
        keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=Q.device))
        att = att.masked_fill(~keep, float("-inf"))
    att = att.softmax(dim=-1)
    return att @ V, att


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.scale = Scale(self.head_dim)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        keep = torch.tril(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool))
        self.register_buffer("keep", keep)

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = self.scale(q @ k.transpose(-2, -1))  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(~self.keep[:T, :T], float("-inf"))
        att = self.attn_dropout(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
