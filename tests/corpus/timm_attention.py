# seen in: huggingface/pytorch-image-models (timm/layers/attention.py, Attention, the non-fused branch): q multiplied by head_dim ** -0.5 before the product, an additive bias from attn.new_full((N, N), -inf).triu_(1) added through a small helper
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def causal_bias(n: int, like: torch.Tensor, is_causal: bool) -> Optional[torch.Tensor]:
    """-inf above the diagonal, 0 elsewhere, in the scores' dtype and device; None when not causal."""
    return like.new_full((n, n), float("-inf")).triu_(1) if is_causal else None


def with_bias(scores: torch.Tensor, bias: Optional[torch.Tensor]) -> torch.Tensor:
    return scores if bias is None else scores + bias


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    q = q * q.shape[-1] ** -0.5
    attn = q @ k.transpose(-2, -1)
    attn = with_bias(attn, causal_bias(q.shape[-2], attn, is_causal)).softmax(dim=-1)
    return attn @ v, attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False) -> None:
        super().__init__()
        assert args.dim % args.n_heads == 0, "dim should be divisible by num_heads"
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.attn_dim = self.num_heads * self.head_dim
        self.scale = self.head_dim ** -0.5
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, self.attn_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.attn_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.attn_dim, bias=False)
        self.wo = nn.Linear(self.attn_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, N, _ = q.shape
        q, k, v = (t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
                   for t in (self.wq(q), self.wk(k), self.wv(v)))
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = self.attn_dropout(with_bias(attn, causal_bias(N, attn, self.is_causal)).softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.attn_dim)
        return self.resid_dropout(self.wo(x))
