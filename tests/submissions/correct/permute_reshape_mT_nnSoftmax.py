# style: heads split with .view(B,T,H,d).permute(0,2,1,3), k.mT, nn.Softmax(dim=-1) module, .reshape instead of .contiguous().view, bool buffer compared == 0
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
    dk = K.shape[-1]
    s = Q @ K.mT / math.sqrt(dk)
    if is_causal:
        n = s.shape[-1]
        lower = torch.tril(torch.ones(n, n, device=s.device)).bool()
        s = s.masked_fill(lower == 0, float("-inf"))
    w = nn.Softmax(dim=-1)(s)
    return w @ V, w


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super(MultiHeadAttention, self).__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        tril = torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)).bool()
        self.register_buffer("tril", tril[None, None])

    def forward(self, q, k, v):
        B, T, D = q.shape
        H, d = self.n_heads, self.head_dim
        q = self.wq(q).view(B, T, H, d).permute(0, 2, 1, 3)
        k = self.wk(k).view(B, T, H, d).permute(0, 2, 1, 3)
        v = self.wv(v).view(B, T, H, d).permute(0, 2, 1, 3)

        att = q @ k.mT / math.sqrt(d)
        if self.is_causal:
            att = att.masked_fill(self.tril[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(self.softmax(att))
        y = (att @ v).permute(0, 2, 1, 3).reshape(B, T, D)
        return self.resid_dropout(self.wo(y))
