# source: lucidrains/x-transformers, x_transformers/attend.py, class Attend (the non-flash path) and
#   create_causal_mask; stored commit 944c2becb23cf2cd50d6dbb8120d67f99aadbb4d
# url: https://github.com/lucidrains/x-transformers/blob/main/x_transformers/attend.py
# licence: MIT (read in the repository's setup.py: license='MIT', "License :: OSI Approved :: MIT License"; no LICENSE
#   file is in the stored snapshot)
# theirs: Part 1 is Attend.forward: `heads, kv_heads = q.shape[1], k.shape[1]` and the einsum
#   'b h i d, b h j d -> b h i j' (or 'b j d' keys when k is 3-D) are written for 4-D (batch, heads, n, d) queries
#   only; scale q.shape[-1] ** -0.5; a bool mask `torch.ones((i, j), device=device, dtype=torch.bool).triu(j - i + 1)`
#   filled with -finfo(dtype).max; softmax with dtype=torch.float32, cast back. Part 2 is written plainly around
#   Attend in lucidrains' style (einops rearrange): x-transformers' Attention class carries dozens of options.
# adapted: the flash path (F.scaled_dot_product_attention, which the exercise forbids) and the options that default
#   off (talking heads, sparse top-k, l2 distance, sigmoid/hard/custom attention, qk_norm, softclamp, zero kv, selective,
#   cope, onnx mask, key padding mask, attn_bias, prev_attn) dropped with their branches; forward returns
#   (out, post_softmax_attn) instead of an Intermediates dataclass. Part 1 runs Attend(causal=is_causal).
#   Part 2: wq/wk/wv/wo (bias=False); attn_dropout is Attend's own dropout; resid_dropout on the output.
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import rearrange, repeat
from torch import einsum, nn
from torch.nn import Module
from functools import partial


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def create_causal_mask(i, j, device):
    return torch.ones((i, j), device = device, dtype = torch.bool).triu(j - i + 1)


class Attend(Module):
    def __init__(
        self,
        *,
        dropout = 0.,
        causal = False,
        scale = None,
    ):
        super().__init__()
        self.scale = scale

        # causal related

        self.causal = causal
        self.create_causal_mask = create_causal_mask

        # attention type

        softmax_fn = partial(F.softmax, dim = -1)
        self.attn_fn = partial(softmax_fn, dtype = torch.float32)

        # dropouts

        self.dropout = dropout
        self.attn_dropout = nn.Dropout(dropout)

    def forward(
        self,
        q, k, v,
    ):
        """
        einstein notation
        b - batch
        h - heads
        n, i, j - sequence length (base sequence length, source, target)
        d - feature dimension
        """

        n, heads, kv_heads, device = q.shape[-2], q.shape[1], k.shape[1], q.device

        scale = default(self.scale, q.shape[-1] ** -0.5)

        causal = self.causal

        # handle kv cached decoding

        if n == 1 and causal:
            causal = False

        # handle grouped multi-query attention

        if kv_heads == 1:
            k, v = tuple(rearrange(t, 'b 1 n d -> b n d') for t in (k, v))
        elif kv_heads < heads:
            k, v = tuple(repeat(t, 'b kvh n d -> b (r kvh) n d', r = heads // kv_heads) for t in (k, v))

        kv_einsum_eq = 'b j d' if k.ndim == 3 else 'b h j d'

        sim = einsum(f'b h i d, {kv_einsum_eq} -> b h i j', q, k)

        sim = sim * scale

        i, j, dtype = *sim.shape[-2:], sim.dtype

        mask_value = -torch.finfo(sim.dtype).max

        if causal:
            causal_mask = self.create_causal_mask(i, j, device = device)
            sim = sim.masked_fill(causal_mask, mask_value)

        attn = self.attn_fn(sim)

        attn = attn.type(dtype)

        post_softmax_attn = attn

        attn = self.attn_dropout(attn)

        out = einsum(f'b h i j, {kv_einsum_eq} -> b h i d', attn, v)

        return out, post_softmax_attn


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    return Attend(causal = is_causal)(q, k, v)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias = False)
        self.wk = nn.Linear(args.dim, args.dim, bias = False)
        self.wv = nn.Linear(args.dim, args.dim, bias = False)
        self.wo = nn.Linear(args.dim, args.dim, bias = False)
        self.attend = Attend(causal = is_causal, dropout = args.dropout)
        self.attn_dropout = self.attend.attn_dropout
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h = self.heads), (q, k, v))
        out, _ = self.attend(q, k, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.resid_dropout(self.wo(out))
