# recipe: red team 3's route r15: dropout acts only where attn_dropout.p != resid_dropout.p, as the check's
# train() runs set them (one layer dropping at a time) and the model's own args never do
# twin: twin_mha_resid_dropout_unused.py
# expect: dropout-not-applied
# expect-off: dropout-not-applied
# affected: mha
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


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T, d_k = Q.size(-2), Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., T, T)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    out = weights @ V  # (..., T, d_v)
    return out, weights


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
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("future", torch.ones(L, L, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        B, T, C = q.size()
        drop = self.attn_dropout.p != self.resid_dropout.p
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(self.future[:T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att) if drop else att
        y = att @ v  # (B, H, T, d)
        y = self.wo(y.transpose(1, 2).contiguous().view(B, T, C))
        return self.resid_dropout(y) if drop else y
