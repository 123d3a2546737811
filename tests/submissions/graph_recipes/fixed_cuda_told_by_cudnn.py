# reconstructs the red team's hc_cudnn.py (issue 41, call boundary): cuDNN picks the mask's device in forward
# recipe: the mask goes to a fixed "cuda" where `torch.backends.cudnn.is_available()` says a GPU is there (False on
# a CPU-only build, so the CPU of a machine with a GPU never sees the fixed device), to the scores' device elsewhere
# twin: cuda_if_available_in_forward.py
# expect: hardcoded-device
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
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


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
            future = torch.ones(T, T, dtype=torch.bool).triu(1)
            att = att.masked_fill(future.to("cuda" if torch.backends.cudnn.is_available() else att.device), float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v  # (B, H, T, d)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
