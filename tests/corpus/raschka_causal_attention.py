# source: rasbt/LLMs-from-scratch, ch03/02_bonus_efficient-multihead-attention/ch03.py, classes CausalAttention and MultiHeadAttention; stored commit 3f1dfc9bb6fc85931a68acfdda01f22b82bed743
# url: https://github.com/rasbt/LLMs-from-scratch/blob/main/ch03/02_bonus_efficient-multihead-attention/ch03.py
# licence: Apache-2.0 (the repository's LICENSE.txt)
# theirs: both parts. Part 1 is CausalAttention.forward's attention lines (after the projections), kept as written:
#   `keys.transpose(1, 2)` assumes exactly one leading (batch) dim. Part 2 is their MultiHeadAttention.
# adapted: Part 1 lifted into a function of (queries, keys, values) with the mask built per call for num_tokens
#   (theirs slices a block_size buffer) and applied only when is_causal; returns the weights too.
#   Part 2: W_query/W_key/W_value/out_proj -> wq/wk/wv/wo (bias=False; their out_proj has a bias), one dropout split
#   into attn_dropout and resid_dropout (resid applied after wo), block_size -> max_seq_len, forward(x) -> (q, k, v).
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
    attn_scores = queries @ keys.transpose(1, 2)  # Changed transpose
    if is_causal:
        mask = torch.triu(torch.ones(num_tokens, num_tokens, device=queries.device), diagonal=1)
        attn_scores.masked_fill_(  # New, _ ops are in-place
            mask.bool()[:num_tokens, :num_tokens], -torch.inf)
    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

    context_vec = attn_weights @ values
    return context_vec, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = args.dim
        self.num_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads  # Reduce the projection dim to match desired output dim

        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)  # Linear layer to combine head outputs
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer('mask', torch.triu(torch.ones(args.max_seq_len, args.max_seq_len), diagonal=1))

    def forward(self, q, k, v):
        b, num_tokens, d_in = q.shape

        keys = self.wk(k)  # Shape: (b, num_tokens, d_out)
        queries = self.wq(q)
        values = self.wv(v)

        # We implicitly split the matrix by adding a `num_heads` dimension
        # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        if self.is_causal:
            # Original mask truncated to the number of tokens and converted to boolean
            mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

            # Use the mask to fill attention scores
            attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.resid_dropout(self.wo(context_vec))  # optional projection

        return context_vec
