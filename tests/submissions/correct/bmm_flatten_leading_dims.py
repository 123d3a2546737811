# style: SDPA flattens any leading dims to 3-D and uses torch.bmm, then restores the shape; MHA folds heads into the batch for bmm too
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


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    *lead, T, d_k = Q.shape
    d_v = V.shape[-1]
    q = Q.reshape(-1, T, d_k)
    k = K.reshape(-1, T, d_k)
    v = V.reshape(-1, T, d_v)
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d_k)       # (N, T, T)
    if is_causal:
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
        scores = scores.masked_fill(mask.unsqueeze(0), float("-inf"))
    w = F.softmax(scores, dim=-1)
    out = torch.bmm(w, v)
    return out.reshape(*lead, T, d_v), w.reshape(*lead, T, T)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.H = args.n_heads
        self.dh = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        n = args.max_seq_len
        self.register_buffer("mask", torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1))

    def forward(self, q, k, v):
        B, T, C = q.shape
        H, dh = self.H, self.dh

        def fold(x):  # (B, T, C) -> (B*H, T, dh)
            return x.view(B, T, H, dh).transpose(1, 2).reshape(B * H, T, dh)

        q, k, v = fold(self.wq(q)), fold(self.wk(k)), fold(self.wv(v))
        att = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dh)
        if self.is_causal:
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = torch.bmm(att, v)                       # (B*H, T, dh)
        y = y.view(B, H, T, dh).transpose(1, 2).reshape(B, T, C)
        return self.resid_dropout(self.wo(y))
