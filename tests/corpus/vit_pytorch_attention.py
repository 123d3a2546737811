# source: lucidrains/vit-pytorch, vit_pytorch/vit.py, class Attention; stored commit
#   0ebd4edab94c211eff78406248896588d155a10c
# url: https://github.com/lucidrains/vit-pytorch/blob/main/vit_pytorch/vit.py
# licence: MIT (read in the repository's LICENSE: "MIT License, Copyright (c) 2025 Phil Wang")
# theirs: both parts. Part 1 is their attention lines (matmul, `* self.scale` with scale = dim_head ** -0.5,
#   nn.Softmax(dim=-1)) lifted into a function; Part 2 is Attention with einops rearrange.
# adapted: ViT attention is not causal: the causal mask is the one lucidrains writes in his causal models
#   (`torch.ones((i, j), device=..., dtype=torch.bool).triu(j - i + 1)` filled with -finfo.max), applied when
#   is_causal. Part 2: the fused to_qkv split into wq/wk/wv (bias=False), to_out's Linear -> wo (bias=False; theirs
#   has a bias) and its Dropout -> resid_dropout; dim_head = args.dim // args.n_heads (theirs is a separate argument,
#   default 64); the pre-attention LayerNorm (`self.norm`, part of their block, not of attention) dropped.
from dataclasses import dataclass

import torch
from torch import nn

from einops import rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    scale = q.shape[-1] ** -0.5

    dots = torch.matmul(q, k.transpose(-1, -2)) * scale

    if is_causal:
        i, j = dots.shape[-2:]
        causal_mask = torch.ones((i, j), device = dots.device, dtype = torch.bool).triu(j - i + 1)
        dots = dots.masked_fill(causal_mask, -torch.finfo(dots.dtype).max)

    attn = nn.Softmax(dim = -1)(dots)

    out = torch.matmul(attn, v)
    return out, attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        dim, heads = args.dim, args.n_heads
        dim_head = dim // heads
        inner_dim = dim_head *  heads

        self.heads = heads
        self.scale = dim_head ** -0.5
        self.is_causal = is_causal

        self.attend = nn.Softmax(dim = -1)
        self.attn_dropout = nn.Dropout(args.dropout)

        self.wq = nn.Linear(dim, inner_dim, bias = False)
        self.wk = nn.Linear(dim, inner_dim, bias = False)
        self.wv = nn.Linear(dim, inner_dim, bias = False)

        self.wo = nn.Linear(inner_dim, dim, bias = False)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = self.heads), (q, k, v))

        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale

        if self.is_causal:
            i, j = dots.shape[-2:]
            causal_mask = torch.ones((i, j), device = dots.device, dtype = torch.bool).triu(j - i + 1)
            dots = dots.masked_fill(causal_mask, -torch.finfo(dots.dtype).max)

        attn = self.attend(dots)
        attn = self.attn_dropout(attn)

        out = torch.matmul(attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.resid_dropout(self.wo(out))
