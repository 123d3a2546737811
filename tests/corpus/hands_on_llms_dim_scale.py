# seen in: Charmaineem/Hands-On-LLMs (Transformer/layers.py, Attention): `d_k = k.dim()`, the number of dims where the key width belongs, so the scores are divided by sqrt(ndim); a debugging print left in
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


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    d_k = k.dim()  # a count of dims, not the key width
    scores = q @ k.transpose(-2, -1)
    if is_causal:
        T = q.size(-2)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    probs = F.softmax(scores / math.sqrt(d_k), dim=-1)
    print(probs)
    return probs @ v, probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("ahead", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        B, T, D = q.shape
        d = D // self.h
        q, k, v = (self.wq(q).view(B, T, self.h, d).transpose(1, 2), self.wk(k).view(B, T, self.h, d).transpose(1, 2),
                   self.wv(v).view(B, T, self.h, d).transpose(1, 2))
        scores = q @ k.transpose(-2, -1)
        if self.is_causal:
            scores = scores.masked_fill(self.ahead[:T, :T], float("-inf"))
        probs = self.attn_dropout(F.softmax(scores / math.sqrt(d), dim=-1))
        return self.resid_dropout(self.wo((probs @ v).transpose(1, 2).contiguous().view(B, T, D)))
