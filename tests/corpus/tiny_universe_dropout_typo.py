# seen in: datawhalechina/tiny-universe (TinyTransformer, attention function, before fb7e57a): `att = dropout_module(dropout)` calls the dropout layer on the rate instead of on the weights, so every call raises; the module (nanoGPT style) is right
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


def scaled_dot_product_attention(q, k, v, is_causal=True, dropout_module=nn.Dropout(0.0), dropout=None, mask=None):
    n = k.size(-2)
    if is_causal and mask is None:
        mask = torch.ones(n, n, device=q.device).tril().view(1, 1, n, n)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # 分数 (B, nh, T, T)
    if is_causal:
        att = att.masked_fill(mask[:, :, :n, :n] == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    att = dropout_module(dropout)  # 传入的是概率 dropout（默认 None），不是 att
    return att @ v, att


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_head = args.n_heads
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("bias", torch.ones(L, L).tril().view(1, 1, L, L))  # 下三角：可以看到的位置

    def forward(self, query, key, value):
        B, T, C = query.size()
        q, k, v = (layer(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for layer, x in zip((self.wq, self.wk, self.wv), (query, key, value)))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if self.is_causal:
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
