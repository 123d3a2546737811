# seen in: the PyTorch 2.0 documentation of F.scaled_dot_product_attention (its reference code): `mask.masked_fill(not mask, -inf)`, Python's `not` on a whole bool tensor, so every causal call raises
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    rows, cols = Q.size(-2), K.size(-2)
    if is_causal:
        bias = torch.ones(rows, cols, dtype=torch.bool, device=Q.device).tril()
    else:
        bias = torch.zeros(rows, cols, dtype=Q.dtype, device=Q.device)
    if bias.dtype == torch.bool:
        bias = bias.masked_fill(not bias, -float("inf"))  # `not` asks for the truth of the whole tensor
    probs = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)) + bias, dim=-1)
    return probs @ V, probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("allowed", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril())

    def forward(self, q, k, v):
        B, L, E = q.shape
        q, k, v = (proj(x).view(B, L, self.n_heads, -1).transpose(1, 2)
                   for proj, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        logits = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if self.is_causal:
            logits = logits.masked_fill(self.allowed[:L, :L].logical_not(), -float("inf"))
        probs = self.attn_dropout(torch.softmax(logits, dim=-1))
        return self.resid_dropout(self.wo((probs @ v).transpose(1, 2).contiguous().view(B, L, E)))
