# seen in: lucidrains/x-transformers (Attend): einsum 'b h i d, b h j d -> b h i j' without `...` (4-D only; 3-D keys read as 'b j d'), scale q.shape[-1] ** -0.5, softmax in float32 through functools.partial, -finfo.max in a triu(j - i + 1) causal mask
from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import einsum, nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


class Attend(nn.Module):
    def __init__(self, *, dropout=0.0, causal=False, scale=None):
        super().__init__()
        self.scale = scale
        self.causal = causal
        self.softmax = partial(F.softmax, dim=-1, dtype=torch.float32)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, q, k, v):
        n = q.shape[-2]
        scale = self.scale if self.scale is not None else q.shape[-1] ** -0.5
        causal = self.causal and n != 1
        kv = "b j d" if k.ndim == 3 else "b h j d"  # keys without heads are shared by every head
        sim = einsum(f"b h i d, {kv} -> b h i j", q, k) * scale
        if causal:
            i, j = sim.shape[-2:]
            hidden = torch.ones((i, j), device=q.device, dtype=torch.bool).triu(j - i + 1)
            sim = sim.masked_fill(hidden, -torch.finfo(sim.dtype).max)
        attn = self.softmax(sim).type(sim.dtype)
        return einsum(f"b h i j, {kv} -> b h i d", self.attn_dropout(attn), v), attn


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    return Attend(causal=is_causal)(q, k, v)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attend = Attend(causal=is_causal, dropout=args.dropout)
        self.attn_dropout = self.attend.attn_dropout
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (self.wq(q), self.wk(k), self.wv(v)))
        out, _ = self.attend(q, k, v)
        return self.resid_dropout(self.wo(rearrange(out, "b h n d -> b n (h d)")))
