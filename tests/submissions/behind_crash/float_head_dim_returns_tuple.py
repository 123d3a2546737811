# seen in: public transformer tutorials: `d_k = d_model / num_heads` (a float head width) in __init__, and forward returning (output, attention weights) as the tutorial's layer did
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.1
    max_seq_len: int = 128


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))  # (..., T, T)
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal=False):
        super().__init__()
        d_model, num_heads = args.dim, args.n_heads
        self.num_heads = num_heads
        self.d_k = d_model / num_heads  # a float: every view() below raises
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)))

    def forward(self, q, k, v):
        B, T, C = q.shape  # batch, sequence length, embedding dim
        q = self.wq(q).view(B, T, self.num_heads, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        k = self.wk(k).view(B, T, self.num_heads, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        v = self.wv(v).view(B, T, self.num_heads, self.d_k).transpose(1, 2)  # (B, h, T, d_k)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, T, T)
        if self.is_causal:
            att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.resid_dropout(self.wo(y)), att  # a tuple: the bug behind the crash
