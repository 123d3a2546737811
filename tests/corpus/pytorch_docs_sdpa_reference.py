# seen in: the PyTorch 2.1-2.3 documentation of F.scaled_dot_product_attention (its reference code): the additive bias and the causal keep-mask created without device=, so on a GPU a CPU tensor is added to CUDA scores
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


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    rows, cols = query.size(-2), key.size(-2)
    factor = 1 / math.sqrt(query.size(-1))
    bias = torch.zeros(rows, cols, dtype=query.dtype)  # on the CPU, whatever the input's device
    if is_causal:
        keep = torch.ones(rows, cols, dtype=torch.bool).tril()
        bias.masked_fill_(keep.logical_not(), float("-inf"))
    logits = query @ key.transpose(-2, -1) * factor
    logits += bias
    probs = torch.softmax(logits, dim=-1)
    return probs @ value, probs


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
        self.register_buffer("keep", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril())

    def forward(self, q, k, v):
        B, L, E = q.shape
        heads = lambda x: x.view(B, L, self.n_heads, -1).transpose(1, 2)  # noqa: E731
        query, key, value = heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v))
        logits = query @ key.transpose(-2, -1) * (1 / math.sqrt(query.size(-1)))
        if self.is_causal:
            logits = logits.masked_fill(self.keep[:L, :L].logical_not(), float("-inf"))
        probs = self.attn_dropout(torch.softmax(logits, dim=-1))
        return self.resid_dropout(self.wo((probs @ value).transpose(1, 2).contiguous().view(B, L, E)))
