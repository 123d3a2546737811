# seen in: jadore801120/attention-is-all-you-need-pytorch (2017 version, Modules.py and SubLayers.py): torch.bmm (3-D only) and temperature np.power(d_model, 0.5) in the heads, a BottleSoftmax, the mask filled through attn.data.masked_fill_, and the head-major batch merged back with a plain view as if batch-major
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


class Bottle(nn.Module):
    """Flattens the two leading dims around the wrapped operation, and restores them after."""

    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)
        lead = input.size()[:2]
        return super(Bottle, self).forward(input.view(lead[0] * lead[1], -1)).view(lead[0], lead[1], -1)


class BottleSoftmax(Bottle, nn.Softmax):
    pass


def no_future(seq):
    """(batch, n, n) bool, True above the diagonal, from numpy, moved to the input's device."""
    shape = (seq.size(0), seq.size(1), seq.size(1))
    return torch.from_numpy(np.triu(np.ones(shape), k=1).astype(bool)).to(seq.device)


class DotProductAttention(nn.Module):
    def __init__(self, width, dropout=0.1):
        super(DotProductAttention, self).__init__()
        self.temper = np.power(width, 0.5)
        self.dropout = nn.Dropout(dropout)
        self.softmax = BottleSoftmax()

    def forward(self, q, k, v, hidden=None):
        attn = torch.bmm(q, k.transpose(1, 2)) / self.temper
        if hidden is not None:
            assert hidden.size() == attn.size(), f"mask {hidden.size()} vs scores {attn.size()}"
            attn.data.masked_fill_(hidden, -float("inf"))
        attn = self.dropout(self.softmax(attn))
        return torch.bmm(attn, v), attn


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    return DotProductAttention(Q.size(-1), dropout=0.0)(Q, K, V, hidden=no_future(Q) if is_causal else None)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        self.n_head = args.n_heads
        self.d_k = args.dim // args.n_heads
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attention = DotProductAttention(args.dim, dropout=args.dropout)  # the model width as temperature
        self.attn_dropout = self.attention.dropout
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        batch, n, width = q.size()

        def head_major(x):  # (batch, n, width) -> (n_head * batch, n, d_k)
            return x.view(batch, n, self.n_head, self.d_k).permute(2, 0, 1, 3).contiguous().view(-1, n, self.d_k)

        hidden = no_future(q).repeat(self.n_head, 1, 1) if self.is_causal else None
        out, _ = self.attention(head_major(self.wq(q)), head_major(self.wk(k)), head_major(self.wv(v)), hidden=hidden)
        out = out.view(batch, n, -1)  # read back as if batch-major
        return self.resid_dropout(self.wo(out.view(-1, out.size(2))).view(batch, n, width))
