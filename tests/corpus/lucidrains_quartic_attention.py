# source: lucidrains/quartic-transformer, quartic_transformer/quartic_transformer.py, class Attention; stored commit
#   0da5aa67a60f00c5ced9c4587e707b422ecf3069
# url: https://github.com/lucidrains/quartic-transformer/blob/main/quartic_transformer/quartic_transformer.py
# licence: MIT (read in the repository's setup.py: license='MIT', classifier "License :: OSI Approved :: MIT License")
# theirs: both parts, with three real bugs: `self.scale = dim_head ** 0.5` then `q = q * self.scale` (multiplies by
#   sqrt(d) where it should divide); the causal mask `torch.ones((i, j), dtype = torch.bool)` has no device= (fails
#   for any input on a GPU); `einsum('b h i d, b h j d -> b h i j')` names exactly four dims.
# adapted: Part 1 is their attention lines lifted into a function (dim_head = q.shape[-1]). Part 2: the fused to_qkv
#   (+ Rearrange 'b n (qkv h d) -> qkv b h n d') split into wq/wk/wv with rearrange 'b n (h d) -> b h n d'; to_out's
#   Linear -> wo and its Dropout -> resid_dropout; dropout -> attn_dropout; dim_head = args.dim // args.n_heads.
#   Dropped as not attention: rmsnorm, edges/attn bias, talking heads, output gates, the padding mask.
#   `einx.softmax('b h i [j]', sim)` written `sim.softmax(dim = -1)`, as an earlier version of the file had it.
from dataclasses import dataclass

import torch
from torch import nn, einsum
from torch.nn import Module

from einops import rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    scale = q.shape[-1] ** 0.5

    q = q * scale
    sim = einsum('b h i d, b h j d -> b h i j', q, k)

    mask_value = -torch.finfo(sim.dtype).max

    if is_causal:
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), dtype = torch.bool).triu(j - i + 1)
        sim = sim.masked_fill(causal_mask, mask_value)

    attn = sim.softmax(dim = -1)

    out = einsum('b h i j, b h j d -> b h i d', attn, v)
    return out, attn


class MultiHeadAttention(Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        dim, heads = args.dim, args.n_heads
        dim_head = dim // heads
        dim_inner = dim_head * heads
        self.heads = heads

        self.wq = nn.Linear(dim, dim_inner, bias = False)
        self.wk = nn.Linear(dim, dim_inner, bias = False)
        self.wv = nn.Linear(dim, dim_inner, bias = False)

        self.scale = dim_head ** 0.5
        self.causal = is_causal
        self.attn_dropout = nn.Dropout(args.dropout)

        self.wo = nn.Linear(dim_inner, dim, bias = False)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = (rearrange(self.wq(q), 'b n (h d) -> b h n d', h = self.heads),
                   rearrange(self.wk(k), 'b n (h d) -> b h n d', h = self.heads),
                   rearrange(self.wv(v), 'b n (h d) -> b h n d', h = self.heads))

        q = q * self.scale
        sim = einsum('b h i d, b h j d -> b h i j', q, k)

        mask_value = -torch.finfo(sim.dtype).max

        if self.causal:
            i, j = sim.shape[-2:]
            causal_mask = torch.ones((i, j), dtype = torch.bool).triu(j - i + 1)
            sim = sim.masked_fill(causal_mask, mask_value)

        attn = sim.softmax(dim = -1)
        attn = self.attn_dropout(attn)

        out = einsum('b h i j, b h j d -> b h i d', attn, v)

        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.resid_dropout(self.wo(out))
