# source: karpathy/minGPT, mingpt/model.py, class CausalSelfAttention; stored commit 08c08d8db0475a1cea334a25bf98dee51972180c
# url: https://github.com/karpathy/minGPT/blob/master/mingpt/model.py
# licence: MIT (Copyright (c) Andrej Karpathy)
# theirs: Part 2. Part 1 is written plainly in the same style.
# adapted: config -> args; key/query/value/proj renamed wk/wq/wv/wo and made bias=False (theirs have biases);
#   attn_drop/resid_drop renamed attn_dropout/resid_dropout; forward(x, layer_past=None) -> forward(q, k, v);
#   the mask applied only when is_causal; the @autocast() decorator dropped (CUDA-only, unrelated to attention).
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
        mask = torch.tril(torch.ones(T, T, device=Q.device))
        att = att.masked_fill(mask == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    return att @ V, att


class MultiHeadAttention(nn.Module):
    """
    A vanilla multi-head masked self-attention layer with a projection at the end.
    """

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        # key, query, value projections for all heads
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        # regularization
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        # output projection
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len))
                                     .view(1, 1, args.max_seq_len, args.max_seq_len))
        self.n_head = args.n_heads
        self.is_causal = is_causal

    def forward(self, q, k, v):
        B, T, C = q.size()

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        k = self.wk(k).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = self.wq(q).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = self.wv(v).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.is_causal:
            att = att.masked_fill(self.mask[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.wo(y))
        return y
