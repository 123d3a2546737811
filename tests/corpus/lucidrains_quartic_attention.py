# seen in: lucidrains/quartic-transformer (Attention): `q = q * dim_head ** 0.5` (multiplies where it should divide), a causal mask made without device=, and einsum 'b h i d, b h j d -> b h i j' that names exactly four dims
from dataclasses import dataclass

import torch
from einops import rearrange
from torch import einsum, nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    q = q * q.shape[-1] ** 0.5
    sim = einsum("b h i d, b h j d -> b h i j", q, k)
    if is_causal:
        i, j = sim.shape[-2:]
        hidden = torch.ones((i, j), dtype=torch.bool).triu(j - i + 1)  # no device=
        sim = sim.masked_fill(hidden, -torch.finfo(sim.dtype).max)
    attn = sim.softmax(dim=-1)
    return einsum("b h i j, b h j d -> b h i d", attn, v), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        dim_head = args.dim // args.n_heads
        self.scale = dim_head ** 0.5
        self.causal = is_causal
        self.wq = nn.Linear(args.dim, dim_head * args.n_heads, bias=False)
        self.wk = nn.Linear(args.dim, dim_head * args.n_heads, bias=False)
        self.wv = nn.Linear(args.dim, dim_head * args.n_heads, bias=False)
        self.wo = nn.Linear(dim_head * args.n_heads, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (self.wq(q), self.wk(k), self.wv(v)))
        sim = einsum("b h i d, b h j d -> b h i j", q * self.scale, k)
        if self.causal:
            i, j = sim.shape[-2:]
            sim = sim.masked_fill(torch.ones((i, j), dtype=torch.bool).triu(j - i + 1), -torch.finfo(sim.dtype).max)
        attn = self.attn_dropout(sim.softmax(dim=-1))
        out = rearrange(einsum("b h i j, b h j d -> b h i d", attn, v), "b h n d -> b n (h d)")
        return self.resid_dropout(self.wo(out))
