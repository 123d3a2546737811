# source: rasbt/LLMs-from-scratch, ch03/02_bonus_efficient-multihead-attention/ch03.py, classes MultiHeadAttentionWrapper and CausalAttention; stored commit 3f1dfc9bb6fc85931a68acfdda01f22b82bed743
# url: https://github.com/rasbt/LLMs-from-scratch/blob/main/ch03/02_bonus_efficient-multihead-attention/ch03.py
# licence: Apache-2.0 (the repository's LICENSE.txt)
# theirs: Part 2: the wrapper that runs one CausalAttention per head in a Python list comprehension and
#   concatenates (the book's stepping stone before the batched MultiHeadAttention). Part 1 is written plainly.
# adapted: each CausalAttention owned its own d_in -> head_dim projections; here the heads share wq/wk/wv
#   (bias=False) and each head attends over its slice of them, so the reference weights load; out_proj -> wo
#   (bias=False); one dropout split into attn_dropout/resid_dropout; block_size -> max_seq_len; mask only when causal.
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(queries, keys, values, is_causal: bool = True):
    num_tokens = queries.shape[-2]
    attn_scores = queries @ keys.transpose(-2, -1)
    if is_causal:
        mask = torch.triu(torch.ones(num_tokens, num_tokens, device=queries.device), diagonal=1)
        attn_scores = attn_scores.masked_fill(mask.bool(), -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
    return attn_weights @ values, attn_weights


class CausalAttention(nn.Module):

    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.dropout = dropout  # New
        self.is_causal = is_causal
        self.register_buffer('mask', torch.triu(torch.ones(block_size, block_size), diagonal=1))  # New

    def forward(self, queries, keys, values):
        b, num_tokens, d_in = queries.shape  # New batch dimension b

        attn_scores = queries @ keys.transpose(1, 2)  # Changed transpose
        if self.is_causal:
            attn_scores.masked_fill_(  # New, _ ops are in-place
                self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)  # New

        context_vec = attn_weights @ values
        return context_vec


class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList(
            [CausalAttention(args.max_seq_len, self.attn_dropout, is_causal)
             for _ in range(args.n_heads)]
        )
        self.wo = nn.Linear(args.dim, args.dim, bias=False)

    def forward(self, q, k, v):
        queries, keys, values = self.wq(q), self.wk(k), self.wv(v)
        d = self.head_dim
        context_vec = torch.cat([head(queries[..., i * d:(i + 1) * d], keys[..., i * d:(i + 1) * d],
                                      values[..., i * d:(i + 1) * d])
                                 for i, head in enumerate(self.heads)], dim=-1)
        return self.resid_dropout(self.wo(context_vec))
