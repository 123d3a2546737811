# source: karpathy/nanoGPT, model.py, class CausalSelfAttention (the manual, non-flash branch); stored commit 0011cd4442915c844e9b8f5c5117f25f5a7096c5
# url: https://github.com/karpathy/nanoGPT/blob/master/model.py
# licence: MIT (Copyright (c) 2022 Andrej Karpathy)
# theirs: Part 2. Part 1 is written plainly in the same style (their attention lines lifted into a function).
# adapted: config -> args (n_embd -> dim, n_head -> n_heads, block_size -> max_seq_len); the fused c_attn split into
#   wq/wk/wv and c_proj renamed wo, all bias=False; forward(x) -> forward(q, k, v); the causal mask applied only when
#   is_causal; the flash branch dropped (it calls F.scaled_dot_product_attention, which the exercise forbids).
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    T = Q.size(-2)
    att = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))
    if is_causal:
        bias = torch.tril(torch.ones(T, T, device=Q.device))
        att = att.masked_fill(bias == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ V
    return y, att


class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        # key, query, value projections for all heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        # output projection
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        # regularization
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_head = args.n_heads
        self.n_embd = args.dim
        self.dropout = args.dropout
        self.is_causal = is_causal
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("bias", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len))
                                    .view(1, 1, args.max_seq_len, args.max_seq_len))

    def forward(self, q, k, v):
        B, T, C = q.size() # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        k = self.wk(k).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = self.wq(q).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = self.wv(v).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # manual implementation of attention
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.is_causal:
            att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.wo(y))
        return y
