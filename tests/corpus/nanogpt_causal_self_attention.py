# seen in: karpathy/nanoGPT (model.py, CausalSelfAttention, the manual branch): a float tril "bias" buffer of shape (1, 1, L, L) compared with == 0, scores times 1.0 / math.sqrt(k.size(-1)), heads merged by transpose + contiguous + view
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
        att = att.masked_fill(torch.ones(T, T, device=Q.device).tril() == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    return att @ V, att


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
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
        self.register_buffer("bias", torch.ones(L, L).tril().view(1, 1, L, L))

    def forward(self, q, k, v):
        B, T, C = q.size()  # batch, length, width
        hs = C // self.n_head
        q = self.wq(q).view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = self.wk(k).view(B, T, self.n_head, hs).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, nh, T, T)
        if self.is_causal:
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)  # heads side by side
        return self.resid_dropout(self.wo(y))
