# source: harvardnlp/annotated-transformer, the_annotated_transformer.py, functions attention and subsequent_mask,
#   class MultiHeadedAttention; stored commit 0a91a254735c07532e23733dce8a693e504f3a08
# url: https://github.com/harvardnlp/annotated-transformer/blob/master/the_annotated_transformer.py
# licence: MIT (the repository's LICENSE)
# theirs: both parts. Part 1 is `attention` fed with their `subsequent_mask(size)`, which builds a (1, size, size)
#   mask on the CPU (no device=) and is filled with -1e9. Part 2 is MultiHeadedAttention with the same mask.
# adapted: the mask argument is built inside from subsequent_mask when is_causal (the notebook passes it in);
#   the dropout argument dropped from Part 1 (the interface has none). Part 2: clones(nn.Linear(d_model, d_model), 4)
#   -> wq/wk/wv/wo with bias=False; dropout -> attn_dropout applied to p_attn as theirs does, plus resid_dropout;
#   h, d_model -> args.n_heads, args.dim; self.attn bookkeeping and `del query` lines kept.
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


def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(
        torch.uint8
    )
    return subsequent_mask == 0


def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    mask = subsequent_mask(Q.size(-2)) if is_causal else None
    return attention(Q, K, V, mask=mask)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        "Take in model size and number of heads."
        super(MultiHeadAttention, self).__init__()
        assert args.dim % args.n_heads == 0
        # We assume d_v always equals d_k
        self.d_k = args.dim // args.n_heads
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn = None
        self.attn_dropout = nn.Dropout(p=args.dropout)
        self.resid_dropout = nn.Dropout(p=args.dropout)
        self.is_causal = is_causal

    def forward(self, query, key, value):
        "Implements Figure 2"
        mask = subsequent_mask(query.size(1)) if self.is_causal else None
        if mask is not None:
            # Same mask applied to all h heads.
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.wq, self.wk, self.wv), (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(
            query, key, value, mask=mask, dropout=self.attn_dropout
        )

        # 3) "Concat" using a view and apply a final linear.
        x = (
            x.transpose(1, 2)
            .contiguous()
            .view(nbatches, -1, self.h * self.d_k)
        )
        del query
        del key
        del value
        return self.resid_dropout(self.wo(x))
