# source: rasbt/LLMs-from-scratch, ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb, section
#   "3) An alternative multi-head attention with combined weights", class MultiHeadAttentionCombinedQKV; stored commit
#   fc101b710e58c3a95f03b6264438310529067e06 (the line was corrected in 00c240ff87163731b336d97f91aeb2943f5b452d, #858)
# url: https://github.com/rasbt/LLMs-from-scratch/blob/fc101b710e58c3a95f03b6264438310529067e06/ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb
# licence: Apache-2.0 (the repository's LICENSE.txt: "Apache License Version 2.0")
# theirs: Part 2 only (a notebook class). `torch.softmax(attn_scores / keys.shape[-1]**-0.5, dim=-1)` divides by
#   d**-0.5, i.e. multiplies the scores by sqrt(head_dim) instead of dividing by it. Part 1 is the class's attention
#   lines (after the qkv split) lifted into a function, as the other one-part files do, the scale line kept as written.
# adapted: Part 1: the mask built per call for num_tokens (theirs slices a context_length buffer) on the query's device
#   and applied only when is_causal; returns the weights too. Part 2: the fused `self.qkv = nn.Linear(d_in, 3 * d_out)`
#   split into wq/wk/wv and its output rebuilt as torch.cat((wq(q), wk(k), wv(v)), dim=-1) (the same layout, so their
#   view(b, n, 3, heads, head_dim) / permute / unbind are kept); proj -> wo (bias=False; theirs has a bias); one dropout
#   split into attn_dropout and resid_dropout (resid applied after wo); context_length -> max_seq_len; the mask applied
#   only when is_causal; forward(x) -> forward(q, k, v).
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

    # (b, num_heads, num_tokens, head_dim) --> (b, num_heads, num_tokens, num_tokens)
    attn_scores = queries @ keys.transpose(-2, -1)
    if is_causal:
        mask = torch.triu(torch.ones(num_tokens, num_tokens, device=queries.device), diagonal=1)
        attn_scores = attn_scores.masked_fill(
            mask.bool()[:num_tokens, :num_tokens], -torch.inf
        )

    attn_weights = torch.softmax(attn_scores / keys.shape[-1]**-0.5, dim=-1)

    # (b, num_heads, num_tokens, num_tokens) --> (b, num_heads, num_tokens, head_dim)
    context_vec = attn_weights @ values
    return context_vec, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        d_in, d_out, num_heads, context_length = args.dim, args.dim, args.n_heads, args.max_seq_len

        assert d_out % num_heads == 0, "d_out is indivisible by num_heads"

        self.num_heads = num_heads
        self.context_length = context_length
        self.head_dim = d_out // num_heads

        self.wq = nn.Linear(d_in, d_out, bias=False)
        self.wk = nn.Linear(d_in, d_out, bias=False)
        self.wv = nn.Linear(d_in, d_out, bias=False)
        self.wo = nn.Linear(d_out, d_out, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length), diagonal=1)
        )

    def forward(self, q, k, v):
        batch_size, num_tokens, embed_dim = q.shape

        # (b, num_tokens, embed_dim) --> (b, num_tokens, 3 * embed_dim)
        qkv = torch.cat((self.wq(q), self.wk(k), self.wv(v)), dim=-1)

        # (b, num_tokens, 3 * embed_dim) --> (b, num_tokens, 3, num_heads, head_dim)
        qkv = qkv.view(batch_size, num_tokens, 3, self.num_heads, self.head_dim)

        # (b, num_tokens, 3, num_heads, head_dim) --> (3, b, num_heads, num_tokens, head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)

        # (3, b, num_heads, num_tokens, head_dim) -> 3 times (b, num_head, num_tokens, head_dim)
        queries, keys, values = qkv.unbind(0)

        # (b, num_heads, num_tokens, head_dim) --> (b, num_heads, num_tokens, num_tokens)
        attn_scores = queries @ keys.transpose(-2, -1)
        if self.is_causal:
            attn_scores = attn_scores.masked_fill(
                self.mask.bool()[:num_tokens, :num_tokens], -torch.inf
            )

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**-0.5, dim=-1)
        attn_weights = self.attn_dropout(attn_weights)

        # (b, num_heads, num_tokens, num_tokens) --> (b, num_heads, num_tokens, head_dim)
        context_vec = attn_weights @ values

        # (b, num_heads, num_tokens, head_dim) --> (b, num_tokens, num_heads, head_dim)
        context_vec = context_vec.transpose(1, 2)

        # (b, num_tokens, num_heads, head_dim) --> (b, num_tokens, embed_dim)
        context_vec = context_vec.contiguous().view(batch_size, num_tokens, embed_dim)

        context_vec = self.resid_dropout(self.wo(context_vec))

        return context_vec
