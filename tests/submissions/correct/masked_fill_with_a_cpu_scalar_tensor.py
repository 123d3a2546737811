# style: masked_fill whose value is a CPU 0-dim tensor, torch.tensor(float("-inf")) (a GPU takes a CPU scalar tensor beside its own), positionally and as value=; triu(diagonal=1) bool masks, a bool buffer
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 128
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    scale = 1 / math.sqrt(Q.size(-1))
    scores = torch.matmul(Q, K.transpose(-2, -1)) * scale
    if is_causal:
        T = scores.size(-1)
        # True where j > i (future tokens) -> push them to the smallest representable value
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=scores.device), diagonal=1)
        scores = scores.masked_fill(future, torch.tensor(float("-inf")))
    attn = F.softmax(scores, dim=-1)
    return torch.matmul(attn, V), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "dim must be divisible by n_heads"
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        future = torch.triu(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("future_mask", future)

    def _split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, q, k, v):
        b, t, c = q.shape
        q, k, v = self._split(self.wq(q)), self._split(self.wk(k)), self._split(self.wv(v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores.masked_fill(self.future_mask[:t, :t], value=torch.tensor(float("-inf")))
        attn = self.attn_dropout(F.softmax(scores, dim=-1))
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.wo(out))
