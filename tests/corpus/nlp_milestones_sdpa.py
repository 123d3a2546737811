# source: Tialo/nlp-milestones-from-scratch, models.py, class ScaledDotProductAttention
# url: https://github.com/Tialo/nlp-milestones-from-scratch/blob/main/models.py
# licence: none stated (no LICENSE file in the index, none in the file)
# theirs: Part 1: `k.transpose(1, 2)`, documented for (batch_size, seq_len, d) input only. Part 2 is written
#   plainly in the same style.
# adapted: the module's forward became the function; a causal mask (on the input's device) added for is_causal;
#   the weights returned.
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    """
    q - (batch_size, seq_len, d_q)
    k - (batch_size, seq_len, d_k)
    v - (batch_size, seq_len, d_v)

    d_q == d_k
    """
    d_k = k.shape[-1]
    attn_weights = q @ k.transpose(1, 2) / d_k ** 0.5  # (batch_size, seq_len, seq_len)
    if is_causal:
        seq_len = q.shape[-2]
        future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=q.device), diagonal=1)
        attn_weights = attn_weights.masked_fill(future, float("-inf"))
    attn_weights = torch.softmax(attn_weights, dim=-1)
    return attn_weights @ v, attn_weights  # (batch_size, seq_len, d_v)


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
        self.register_buffer("mask", torch.triu(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool), diagonal=1))

    def forward(self, q, k, v):
        """
        q, k, v - (batch_size, seq_len, d_model)
        """
        batch_size, seq_len, d_model = q.shape
        q = self.wq(q).view(batch_size, seq_len, self.n_heads, -1).transpose(1, 2)  # (batch_size, n_heads, seq_len, d_k)
        k = self.wk(k).view(batch_size, seq_len, self.n_heads, -1).transpose(1, 2)
        v = self.wv(v).view(batch_size, seq_len, self.n_heads, -1).transpose(1, 2)
        attn_weights = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (batch_size, n_heads, seq_len, seq_len)
        if self.is_causal:
            attn_weights = attn_weights.masked_fill(self.mask[:seq_len, :seq_len], float("-inf"))
        attn_weights = self.attn_dropout(torch.softmax(attn_weights, dim=-1))
        out = (attn_weights @ v).transpose(1, 2).reshape(batch_size, seq_len, d_model)
        return self.resid_dropout(self.wo(out))
