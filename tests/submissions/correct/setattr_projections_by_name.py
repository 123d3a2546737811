# style: the four projections made by name with setattr(self, name, ...) in a loop; the causal mask built per call on the input's device (device=q.device)
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
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-1, -2)) * (1.0 / math.sqrt(d_k))
    if is_causal:
        L = scores.size(-2)
        mask = torch.ones(L, L, dtype=torch.bool, device=Q.device).triu(1)
        scores = scores.masked_fill(mask, float('-inf'))
    weights = F.softmax(scores, dim=-1)
    output = torch.matmul(weights, V)
    return output, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.max_seq_len = args.max_seq_len
        for name in ("wq", "wk", "wv", "wo"):  # the four projections, made by name
            setattr(self, name, nn.Linear(args.dim, args.dim, bias=False))
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        batch, seq_len, dim = q.size()
        assert seq_len <= self.max_seq_len

        def heads(x):
            return x.view(batch, seq_len, self.n_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        if self.is_causal:
            # build the mask where the data lives, so .cuda() / .to(device) just works
            mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), diagonal=1)
            scores = scores.masked_fill(mask, float('-inf'))
        attn = self.attn_dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(attn, v)
        context = context.transpose(1, 2).contiguous().view(batch, seq_len, dim)
        return self.resid_dropout(self.wo(context))
