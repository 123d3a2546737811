# style: one additive causal mask for up to 1024 positions, built once at module level (no buffer), sliced to
# T x T and moved to the scores' device and dtype in every call (float16 scores stay float16); Part 1 uses
# masked_fill with a per-call bool mask
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

MAX_POSITIONS = 1024
FUTURE = torch.full((1, 1, MAX_POSITIONS, MAX_POSITIONS), float("-inf")).triu(1)


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    length = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        above = torch.ones(length, length, dtype=torch.bool, device=Q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def split(self, x, batch, length):
        return x.view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)

    def forward(self, q, k, v):
        batch, length, dim = q.shape
        q = self.split(self.wq(q), batch, length)
        k = self.split(self.wk(k), batch, length)
        v = self.split(self.wv(v), batch, length)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores + FUTURE[:, :, :length, :length].to(scores.device, scores.dtype)
        weights = self.attn_dropout(F.softmax(scores, dim=-1))
        mixed = (weights @ v).transpose(1, 2).contiguous().view(batch, length, dim)
        return self.resid_dropout(self.wo(mixed))
