# seen in: lucidrains/vit-pytorch (vit_pytorch/vit.py, Attention, later versions): the block's pre-norm moved inside the attention module, an nn.LayerNorm(dim) applied to the input before the projections; Part 1 in the same file's style
from dataclasses import dataclass

import torch
from einops import rearrange
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    sim = torch.matmul(q, k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if is_causal:
        i, j = sim.shape[-2:]
        hidden = torch.ones((i, j), device=sim.device, dtype=torch.bool).triu(1)
        sim = sim.masked_fill(hidden, float("-inf"))
    attn = sim.softmax(dim=-1)
    return torch.matmul(attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        dim_head = args.dim // args.n_heads
        self.scale = dim_head ** -0.5
        self.is_causal = is_causal
        self.norm = nn.LayerNorm(args.dim)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = self.norm(q), self.norm(k), self.norm(v)  # (b, n, dim), each normalised over dim
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (self.wq(q), self.wk(k), self.wv(v)))
        sim = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        if self.is_causal:
            i, j = sim.shape[-2:]
            hidden = torch.ones((i, j), device=sim.device, dtype=torch.bool).triu(1)
            sim = sim.masked_fill(hidden, float("-inf"))
        attn = self.attn_dropout(sim.softmax(dim=-1))
        return self.resid_dropout(self.wo(rearrange(torch.matmul(attn, v), "b h n d -> b n (h d)")))
