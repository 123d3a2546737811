# source: karpathy/llama2.c, model.py, class Attention (the manual, non-flash branch); stored commit
#   c05b45a5917130e090263fc222573d5251cbe0af
# url: https://github.com/karpathy/llama2.c/blob/master/model.py
# licence: MIT (read in the repository's LICENSE: "MIT License, Copyright (c) 2023 Andrej")
# theirs: both parts. Part 1 is the manual branch's lines lifted into a function: `torch.matmul(xq, xk.transpose(2, 3))`
#   (a fixed pair of axes: right for 4-D (bs, heads, seqlen, head_dim) only) and an additive (1, 1, T, T) mask of
#   -inf above the diagonal (`torch.full(..., float("-inf"))` + `torch.triu(mask, diagonal=1)`), softmax upcast to
#   float32 (`F.softmax(scores.float(), dim=-1).type_as(xq)`). Part 2 is Attention, whose mask is that (1, 1, max_seq_len,
#   max_seq_len) float buffer sliced `[:, :, :seqlen, :seqlen]`.
# adapted: the flash branch (F.scaled_dot_product_attention, which the exercise forbids) and `self.flash` dropped, the
#   buffer always registered; RoPE (`apply_rotary_emb` and the freqs_cos/freqs_sin arguments) dropped; n_kv_heads taken
#   as n_heads (no grouped-query attention: repeat_kv is then the identity and dropped), model_parallel_size (1) dropped;
#   the mask added only when is_causal (theirs always is). Part 1: the mask built as their buffer is, at the scores'
#   length, on the query's device (their buffer has no place in a function). Part 2: forward(x) -> forward(q, k, v).
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(xq, xk, xv, is_causal: bool = True):
    seqlen = xq.shape[-2]
    head_dim = xq.shape[-1]
    scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(head_dim)
    if is_causal:
        mask = torch.full((1, 1, seqlen, seqlen), float("-inf"), device=xq.device)
        mask = torch.triu(mask, diagonal=1)
        scores = scores + mask
    scores = F.softmax(scores.float(), dim=-1).type_as(xq)
    output = torch.matmul(scores, xv)
    return output, scores


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_local_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.dropout = args.dropout
        self.is_causal = is_causal

        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
        mask = torch.triu(mask, diagonal=1)
        self.register_buffer("mask", mask)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        bsz, seqlen, _ = q.shape

        # QKV
        xq, xk, xv = self.wq(q), self.wk(k), self.wv(v)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_heads, self.head_dim)

        # make heads into a batch dimension
        xq = xq.transpose(1, 2)  # (bs, n_local_heads, seqlen, head_dim)
        xk = xk.transpose(1, 2)
        xv = xv.transpose(1, 2)

        # manual implementation
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores + self.mask[:, :, :seqlen, :seqlen]   # (bs, n_local_heads, seqlen, cache_len + seqlen)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        scores = self.attn_dropout(scores)
        output = torch.matmul(scores, xv)  # (bs, n_local_heads, seqlen, head_dim)

        # restore time as batch dimension and concat heads
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)

        # final projection into the residual stream
        output = self.wo(output)
        output = self.resid_dropout(output)
        return output
