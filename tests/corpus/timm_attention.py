# source: huggingface/pytorch-image-models (timm), timm/layers/attention.py, functions maybe_add_mask and
#   resolve_self_attn_mask, class Attention (the non-fused branch; the separate q/k/v projections as AttentionRope
#   of the same file writes them); stored commit 02bb6b3e3e423554c211eaa0c6b419461336f94e
# url: https://github.com/huggingface/pytorch-image-models/blob/main/timm/layers/attention.py
# licence: Apache-2.0 (read in the repository's LICENSE: "Apache License Version 2.0 ... Copyright 2025 Ross Wightman")
# theirs: both parts. Part 1 is the non-fused branch's lines (q * scale, an additive -inf bias from
#   `new_full(...).triu_(1)`, softmax) lifted into a function with their two helpers; Part 2 is Attention.
# adapted: the fused branch dropped (it calls F.scaled_dot_product_attention, which the exercise forbids) and with it
#   use_fused_attn; the @torch.fx.wrap/@register_notrace_function decorators dropped. Part 2: the fused qkv Linear
#   (reshape(B, N, 3, heads, head_dim)) split into wq/wk/wv with the same per-head layout, proj -> wo (bias=False),
#   attn_drop -> attn_dropout, proj_drop -> resid_dropout; q_norm/k_norm/norm (Identity by default) dropped;
#   is_causal moved from forward's argument to the constructor; attn_mask argument dropped; forward(x) -> (q, k, v).
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


def maybe_add_mask(scores: torch.Tensor, attn_mask: Optional[torch.Tensor] = None):
    return scores if attn_mask is None else scores + attn_mask


def resolve_self_attn_mask(
        seq_len: int,
        attn: torch.Tensor,
        attn_mask: Optional[torch.Tensor] = None,
        is_causal: bool = False,
) -> Optional[torch.Tensor]:
    # Build additive bias matching SDPA semantics for self-attention
    # is_causal and attn_mask are mutually exclusive (is_causal takes precedence)
    if is_causal:
        attn_bias = attn.new_full((seq_len, seq_len), float('-inf')).triu_(1)
    elif attn_mask is None:
        attn_bias = None
    elif attn_mask.dtype == torch.bool:
        attn_bias = torch.zeros_like(attn_mask, dtype=attn.dtype)
        attn_bias.masked_fill_(~attn_mask, float('-inf'))
    else:
        attn_bias = attn_mask
    return attn_bias


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    N = q.shape[-2]
    scale = q.shape[-1] ** -0.5
    q = q * scale
    attn = q @ k.transpose(-2, -1)
    attn_bias = resolve_self_attn_mask(N, attn, None, is_causal)
    attn = maybe_add_mask(attn, attn_bias)
    attn = attn.softmax(dim=-1)
    x = attn @ v
    return x, attn


class MultiHeadAttention(nn.Module):
    """Standard Multi-head Self Attention module with QKV projection."""

    def __init__(self, args, is_causal: bool = False) -> None:
        super().__init__()
        dim, num_heads = args.dim, args.n_heads
        assert dim % num_heads == 0, 'dim should be divisible by num_heads'
        head_dim = dim // num_heads

        self.num_heads = num_heads
        self.head_dim = head_dim
        self.attn_dim = num_heads * head_dim
        self.scale = head_dim ** -0.5
        self.is_causal = is_causal

        self.wq = nn.Linear(dim, self.attn_dim, bias=False)
        self.wk = nn.Linear(dim, self.attn_dim, bias=False)
        self.wv = nn.Linear(dim, self.attn_dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.wo = nn.Linear(self.attn_dim, dim, bias=False)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, N, C = q.shape
        q = self.wq(q).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2)

        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn_bias = resolve_self_attn_mask(N, attn, None, self.is_causal)
        attn = maybe_add_mask(attn, attn_bias)
        attn = attn.softmax(dim=-1)
        attn = self.attn_dropout(attn)
        x = attn @ v

        x = x.transpose(1, 2).reshape(B, N, self.attn_dim)
        x = self.wo(x)
        x = self.resid_dropout(x)
        return x
