# source: bitkira/Stanford-CS336, assignment1-basics-main/cs336_basics/ScaledDotProductAttention.py
#   (a student's CS336 assignment 1)
# url: https://github.com/bitkira/Stanford-CS336/blob/main/assignment1-basics-main/cs336_basics/ScaledDotProductAttention.py
# licence: none stated (no LICENSE file in the index, none in the file)
# theirs: Part 1: einops `rearrange` for K^T over `...` leading dims, the scale through
#   torch.sqrt(torch.tensor(d, dtype=q.dtype)), the boolean mask applied in place with masked_fill_(~mask).
#   Part 2 is written plainly in the same style.
# adapted: their own `softmax(x, i)` (cs336_basics/Softmax.py, not in the stored copy) written as the usual stable
#   softmax; the mask argument built as a lower-triangular keep-mask on the input's device when is_causal;
#   the sys.path hack dropped; the weights returned.
from dataclasses import dataclass

import torch
import torch.nn as nn
from einops import rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def softmax(x, i):
    x = x - torch.max(x, dim=i, keepdim=True).values
    e = torch.exp(x)
    return e / torch.sum(e, dim=i, keepdim=True)


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    mask = None
    if is_causal:
        seq_len = q.shape[-2]
        mask = torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device))
    k = rearrange(k, "... seq_len d_k -> ... d_k seq_len")
    out = torch.matmul(q, k) / torch.sqrt(torch.tensor(q.shape[-1], dtype=q.dtype))
    if mask is not None:
        out.masked_fill_(~mask,float('-inf'))
    weights = softmax(out, i=-1)
    return torch.matmul(weights, v), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool)))

    def forward(self, q, k, v):
        seq_len = q.shape[-2]
        q = rearrange(self.wq(q), "b seq_len (h d_k) -> b h seq_len d_k", h=self.num_heads)
        k = rearrange(self.wk(k), "b seq_len (h d_k) -> b h d_k seq_len", h=self.num_heads)
        v = rearrange(self.wv(v), "b seq_len (h d_v) -> b h seq_len d_v", h=self.num_heads)
        out = torch.matmul(q, k) / torch.sqrt(torch.tensor(q.shape[-1], dtype=q.dtype))
        if self.is_causal:
            out = out.masked_fill(~self.mask[:seq_len, :seq_len], float('-inf'))
        weights = self.attn_dropout(softmax(out, i=-1))
        out = rearrange(torch.matmul(weights, v), "b h seq_len d_v -> b seq_len (h d_v)")
        return self.resid_dropout(self.wo(out))
