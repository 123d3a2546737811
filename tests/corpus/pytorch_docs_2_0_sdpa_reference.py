# source: PyTorch 2.0 documentation, torch.nn.functional.scaled_dot_product_attention, the "Efficient implementation
#   equivalent to the following" reference code
# url: https://pytorch.org/docs/2.0/generated/torch.nn.functional.scaled_dot_product_attention.html
# licence: BSD-3-Clause (PyTorch)
# theirs: Part 1. `attn_mask.masked_fill(not attn_mask, ...)` applies Python's `not` to a whole tensor (it raises for
#   more than one element), and a bool mask is added to the scores as 0/1. Part 2 is written plainly.
# adapted: wrapped in the interface's function (Q, K, V, is_causal), the unused dropout line dropped, a zero mask
#   used when not causal (theirs reads the attn_mask argument), returns (output, weights). L, S taken from Q and K.
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    L, S = Q.size(-2), K.size(-2)
    attn_mask = torch.ones(L, S, dtype=torch.bool, device=Q.device).tril(diagonal=0) if is_causal else torch.zeros(L, S, dtype=Q.dtype, device=Q.device)
    attn_mask = attn_mask.masked_fill(not attn_mask, -float('inf')) if attn_mask.dtype==torch.bool else attn_mask
    attn_weight = torch.softmax((Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))) + attn_mask, dim=-1)
    return attn_weight @ V, attn_weight


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril(diagonal=0))

    def forward(self, q, k, v):
        B, L, E = q.shape
        Q = self.wq(q).view(B, L, self.n_heads, -1).transpose(1, 2)
        K = self.wk(k).view(B, L, self.n_heads, -1).transpose(1, 2)
        V = self.wv(v).view(B, L, self.n_heads, -1).transpose(1, 2)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
        if self.is_causal:
            scores = scores.masked_fill(self.mask[:L, :L].logical_not(), -float('inf'))
        attn_weight = self.attn_dropout(torch.softmax(scores, dim=-1))
        out = (attn_weight @ V).transpose(1, 2).contiguous().view(B, L, E)
        return self.resid_dropout(self.wo(out))
