# source: labmlai/annotated_deep_learning_paper_implementations, labml_nn/transformers/mha.py (classes
#   PrepareForMultiHeadAttention and MultiHeadAttention; stored commit 18298f68cfc79f8da910913463b3270ed3c7cf65) and
#   labml_nn/transformers/utils.py (subsequent_mask; stored commit 132359fdf07fd07db367e431afd4ccc2e09d3a73)
# url: https://github.com/labmlai/annotated_deep_learning_paper_implementations/blob/master/labml_nn/transformers/mha.py
# licence: MIT (read in the repository's setup.py classifier "License :: OSI Approved :: MIT License")
# theirs: Part 2. labml's tensors are sequence-first, `[seq_len, batch_size, d_model]`: `seq_len, batch_size, _ =
#   query.shape`, einsum 'ibhd,jbhd->ijbh', softmax(dim=1). Fed this exercise's batch-first (B, T, dim) input, it
#   attends across the batch and never across time. The mask is filled with -1e9 (cannot be converted to float16).
#   Part 1 is written plainly in the same einsum style.
# adapted: PrepareForMultiHeadAttention's Linear -> wq/wk/wv (bias=False) with its view inlined; output -> wo
#   (bias=False; theirs has a bias); dropout -> attn_dropout, resid_dropout added; the mask built when causal from
#   subsequent_mask(seq_len).to(query.device), as their autoregressive experiment does, instead of passed in;
#   labml's tracker.debug and the self.attn bookkeeping dropped; __call__(*, query, key, value) -> forward(q, k, v).
import math
from dataclasses import dataclass

import torch
from torch import nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def subsequent_mask(seq_len):
    """
    ## Subsequent mask to mask out data from future (subsequent) time steps
    """
    mask = torch.tril(torch.ones(seq_len, seq_len)).to(torch.bool).unsqueeze(-1)
    return mask


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scores = torch.einsum('...id,...jd->...ij', query, key) / math.sqrt(query.shape[-1])
    if is_causal:
        seq_len = query.shape[-2]
        mask = subsequent_mask(seq_len).to(query.device)[..., 0]
        scores = scores.masked_fill(mask == 0, -1e9)
    attn = F.softmax(scores, dim=-1)
    return torch.einsum('...ij,...jd->...id', attn, value), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        heads, d_model = args.n_heads, args.dim
        self.d_k = d_model // heads
        self.heads = heads
        self.is_causal = is_causal

        # These transform the `query`, `key` and `value` vectors for multi-headed attention.
        self.wq = nn.Linear(d_model, heads * self.d_k, bias=False)
        self.wk = nn.Linear(d_model, heads * self.d_k, bias=False)
        self.wv = nn.Linear(d_model, heads * self.d_k, bias=False)

        # Output layer
        self.wo = nn.Linear(d_model, d_model, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.scale = 1 / math.sqrt(self.d_k)

    def get_scores(self, query: torch.Tensor, key: torch.Tensor):
        """
        ### Calculate scores between queries and keys
        """
        return torch.einsum('ibhd,jbhd->ijbh', query, key)

    def forward(self, q, k, v):
        # `query`, `key` and `value`  have shape `[seq_len, batch_size, d_model]`
        seq_len, batch_size, _ = q.shape

        mask = None
        if self.is_causal:
            # `mask` has shape `[seq_len, seq_len, batch_size]`,
            mask = subsequent_mask(seq_len).to(q.device)
            # Same mask applied to all `h` heads.
            mask = mask.unsqueeze(-1)

        # Prepare `query`, `key` and `value` for attention computation
        # These will then have shape `[seq_len, batch_size, heads, d_k]`
        query = self.wq(q).view(seq_len, batch_size, self.heads, self.d_k)
        key = self.wk(k).view(seq_len, batch_size, self.heads, self.d_k)
        value = self.wv(v).view(seq_len, batch_size, self.heads, self.d_k)

        # Compute attention scores
        scores = self.get_scores(query, key)

        # Scale scores
        scores *= self.scale

        # Apply mask
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)

        # $softmax$ attention
        attn = F.softmax(scores, dim=1)

        # Apply dropout
        attn = self.attn_dropout(attn)

        # Calculate the attention results
        x = torch.einsum("ijbh,jbhd->ibhd", attn, value)

        # Concatenate multiple heads
        x = x.reshape(seq_len, batch_size, -1)

        # Output layer
        return self.resid_dropout(self.wo(x))
