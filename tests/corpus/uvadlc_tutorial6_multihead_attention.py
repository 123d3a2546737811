# source: phlippe/uvadlc_notebooks, docs/tutorial_notebooks/tutorial6/Transformers_and_MHAttention.ipynb (UvA Deep
#   Learning course, Tutorial 6), function scaled_dot_product and class MultiheadAttention; stored commit
#   e8bb899039e43a87ca3790545ac1387be6184f92
# url: https://uvadlc-notebooks.readthedocs.io/en/latest/tutorial_notebooks/tutorial6/Transformers_and_MHAttention.html
# licence: MIT (read in the repository's LICENSE.md: "MIT License, Copyright (c) 2020 Phillip Lippe")
# theirs: both parts. The mask is filled with -9e15, which float16 cannot hold: masked_fill raises in half precision.
# adapted: the tutorial passes `mask` in; here it is built when is_causal as a lower-triangular keep-mask on q's
#   device (their convention: positions where mask == 0 are filled). Part 2: the fused qkv_proj (whose reshape
#   interleaves q, k, v per head) split into wq/wk/wv with the same per-head reshape/permute, o_proj -> wo, all
#   bias=False; _reset_parameters (xavier init) dropped; input_dim = embed_dim = args.dim; their module has no
#   dropout: scaled_dot_product's lines inlined in forward so attn_dropout applies to the attention, resid_dropout
#   to the output; return_attention dropped.
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


def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    seq_length = q.size(-2)
    mask = torch.tril(torch.ones(seq_length, seq_length, device=q.device)) if is_causal else None
    return scaled_dot_product(q, k, v, mask=mask)


class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "Embedding dimension must be 0 modulo number of heads."

        self.embed_dim = args.dim
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.is_causal = is_causal

        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        batch_size, seq_length, _ = q.size()
        mask = torch.tril(torch.ones(seq_length, seq_length, device=q.device)) if self.is_causal else None

        # Separate Q, K, V from linear output
        q = self.wq(q).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.wk(k).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.wv(v).reshape(batch_size, seq_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        # Determine value outputs
        d_k = q.size()[-1]
        attn_logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
        if mask is not None:
            attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
        attention = self.attn_dropout(F.softmax(attn_logits, dim=-1))
        values = torch.matmul(attention, v)
        values = values.permute(0, 2, 1, 3)  # [Batch, SeqLen, Head, Dims]
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.resid_dropout(self.wo(values))
        return o
