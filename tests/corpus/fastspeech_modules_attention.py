# seen in: ming024/FastSpeech2 (transformer/Modules.py, ScaledDotProductAttention, from jadore801120/attention-is-all-you-need-pytorch): torch.bmm, k.transpose(1, 2) and nn.Softmax(dim=2), all for 3-D input only; temperature np.power(d_k, 0.5); heads folded head-major into the batch
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    temperature = np.power(k.shape[-1], 0.5)
    scores = torch.bmm(q, k.transpose(1, 2)) / temperature
    if is_causal:
        scores = scores.masked_fill(torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1),
                                    -np.inf)
    probs = nn.Softmax(dim=2)(scores)
    return torch.bmm(probs, v), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_head = args.n_heads
        self.d_k = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.softmax = nn.Softmax(dim=2)
        self.is_causal = is_causal
        self.register_buffer("ahead", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        n_head, d_k = self.n_head, self.d_k
        batch, length, _ = q.size()

        def fold(x):  # (batch, length, dim) -> (n_head * batch, length, d_k), head-major
            return x.view(batch, length, n_head, d_k).permute(2, 0, 1, 3).contiguous().view(-1, length, d_k)

        q, k, v = fold(self.wq(q)), fold(self.wk(k)), fold(self.wv(v))
        scores = torch.bmm(q, k.transpose(1, 2)) / np.power(d_k, 0.5)
        if self.is_causal:
            scores = scores.masked_fill(self.ahead[:length, :length], -np.inf)
        out = torch.bmm(self.attn_dropout(self.softmax(scores)), v)
        out = out.view(n_head, batch, length, d_k).permute(1, 2, 0, 3).contiguous().view(batch, length, -1)
        return self.resid_dropout(self.wo(out))
