# source: PyTorch documentation, torch.nn.functional.scaled_dot_product_attention, the "Efficient implementation
#   equivalent to the following" reference code as published for the 2.1-2.3 docs (later versions added device=)
# url: https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html (stored copy)
# licence: BSD-3-Clause (PyTorch)
# theirs: Part 1: attn_bias and temp_mask are created without device=, so on a GPU `attn_weight += attn_bias` mixes
#   a CPU tensor into a CUDA one. Part 2 is written plainly around their function.
# adapted: the attn_mask, dropout_p and scale parameters dropped (the interface has none; is_causal kept);
#   returns (output, weights); `attn_bias.to(query.dtype)` (a no-op as written) kept.
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
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1))
    attn_bias = torch.zeros(L, S, dtype=query.dtype)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
        attn_bias.to(query.dtype)
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight @ value, attn_weight


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
        mask = torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril(diagonal=0)
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        B, L, E = q.shape
        query = self.wq(q).view(B, L, self.n_heads, -1).transpose(1, 2)
        key = self.wk(k).view(B, L, self.n_heads, -1).transpose(1, 2)
        value = self.wv(v).view(B, L, self.n_heads, -1).transpose(1, 2)
        scale_factor = 1 / math.sqrt(query.size(-1))
        attn_weight = query @ key.transpose(-2, -1) * scale_factor
        if self.is_causal:
            attn_weight = attn_weight.masked_fill(self.mask[:L, :L].logical_not(), float("-inf"))
        attn_weight = self.attn_dropout(torch.softmax(attn_weight, dim=-1))
        out = (attn_weight @ value).transpose(1, 2).contiguous().view(B, L, E)
        return self.resid_dropout(self.wo(out))
