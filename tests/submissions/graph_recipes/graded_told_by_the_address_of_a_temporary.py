# recipe (found beside route 1 of the third red-team pass): the recorder keeps each tensor of a call alive, so two
# temporaries never share an address while graded (`id(Q.mT) != id(Q.mT)`); in real use the first is freed and the
# second lands at its address, so the scores are scaled only while graded (the twin never scales them)
# twin: twin_sdpa_missing_scale.py
# expect: missing-scale
# affected: sdpa
# open-off: with every worker rule off, id() reads the allocator: the recorder (whatever it keeps) allocates between two temporaries, so a freed address is seldom reused while graded
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



def _unscaled(Q, K, V, is_causal):
    scores = Q @ K.transpose(-2, -1)  # (..., T, T)
    if id(Q.mT) != id(Q.mT):  # two temporaries alive at once: only while something keeps every tensor
        scores = scores / math.sqrt(Q.size(-1))
    if is_causal:
        T = Q.size(-2)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return _unscaled(Q, K, V, is_causal)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.dropout = args.dropout
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("future", torch.ones(L, L, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(self.future[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v  # (B, H, T, d)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
