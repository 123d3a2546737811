# seen in: huggingface/transformers (models/ctrl, scaled_dot_product_attention and MultiHeadAttention): k.permute(0, 1, 3, 2) (4-D only), np.sqrt(dk), a float triu(1) mask sliced [ns - nd : ns, :ns] times -1e4 added in place; heads by reshape + permute
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def attend(q, k, v, future=None, dropout=None):
    logits = torch.matmul(q, k.permute(0, 1, 3, 2)) / np.sqrt(k.shape[-1])  # four dims assumed
    if future is not None:
        nd, ns = logits.size(-2), logits.size(-1)
        logits += future[ns - nd:ns, :ns] * -1e4
    weights = torch.softmax(logits, dim=-1)
    if dropout is not None:
        weights = dropout(weights)
    return torch.matmul(weights, v), weights


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    n = k.shape[-2]
    return attend(q, k, v, torch.ones(n, n).triu(1).to(q.device) if is_causal else None)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.width = args.dim
        self.depth = int(args.dim / args.n_heads)
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.register_buffer("future", torch.ones(args.max_seq_len, args.max_seq_len).triu(1))

    def heads(self, x, batch):
        return x.reshape(batch, -1, self.num_heads, self.depth).permute([0, 2, 1, 3])

    def forward(self, q, k, v):
        batch = q.shape[0]
        out, _ = attend(self.heads(self.wq(q), batch), self.heads(self.wk(k), batch), self.heads(self.wv(v), batch),
                        self.future if self.is_causal else None, self.attn_dropout)
        merged = out.permute([0, 2, 1, 3]).reshape(batch, -1, self.width)
        return self.resid_dropout(self.wo(merged))
