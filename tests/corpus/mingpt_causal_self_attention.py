# seen in: karpathy/minGPT (mingpt/model.py, CausalSelfAttention): a float tril buffer of shape (1, 1, L, L) compared with == 0 in masked_fill, scores times 1/sqrt(head size), heads merged by transpose + contiguous + view
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
    scores = (Q @ K.transpose(-2, -1)) * (1.0 / math.sqrt(K.size(-1)))
    if is_causal:
        lower = torch.ones(T, T, device=Q.device).tril()
        scores = scores.masked_fill(lower == 0, float("-inf"))
    scores = F.softmax(scores, dim=-1)
    return scores @ V, scores


class MultiHeadAttention(nn.Module):
    """Masked multi-head self-attention with an output projection."""

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        L = args.max_seq_len
        self.register_buffer("lower", torch.ones(L, L).tril().view(1, 1, L, L))
        self.heads = args.n_heads
        self.is_causal = is_causal

    def forward(self, q, k, v):
        B, T, C = q.size()
        hs = C // self.heads
        k = self.wk(k).view(B, T, self.heads, hs).transpose(1, 2)  # (B, heads, T, hs)
        q = self.wq(q).view(B, T, self.heads, hs).transpose(1, 2)
        v = self.wv(v).view(B, T, self.heads, hs).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, heads, T, T)
        if self.is_causal:
            scores = scores.masked_fill(self.lower[:, :, :T, :T] == 0, float("-inf"))
        scores = self.attn_dropout(F.softmax(scores, dim=-1))
        y = (scores @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
