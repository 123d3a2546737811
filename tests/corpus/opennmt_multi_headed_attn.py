# source: OpenNMT/OpenNMT-py, onmt/modules/multi_headed_attn.py, class MultiHeadedAttention (stored commit
#   7bfc6b60dea5c68a0883f7f9219d571ee0b163c7), with the future mask of onmt/decoders/transformer.py,
#   TransformerDecoderLayer._forward (stored commit 7c4e025d7174031e37989d54aa6aae63d1448e8e)
# url: https://github.com/OpenNMT/OpenNMT-py/blob/master/onmt/modules/multi_headed_attn.py
# licence: MIT (read in the repository's LICENSE: "MIT License, Copyright (c) 2017 OpenNMT")
# theirs: both parts. Part 1 is forward's lines from "2) Calculate and scale scores" to the context lifted into a
#   function: the query divided by sqrt(dim_per_head) before the product, `torch.matmul(query, key.transpose(2, 3))`
#   (4-D (batch, heads, len, d) only), the scores upcast with `.float()` and then `masked_fill(mask, -1e18)` (in float32,
#   so the fill never meets float16), the weights cast back to the query's dtype. The mask is the decoder's
#   `torch.ones([T, T], device=..., dtype=torch.uint8).triu_(1).view(1, T, T)` made bool, unsqueezed to (1, 1, T, T)
#   by the attention module. Part 2 is MultiHeadedAttention.
# adapted: relative positions, the layer cache and the padding mask dropped (dec_mask is then the future mask alone);
#   the future mask built on the query's device as the decoder builds it on its input's, only when is_causal; Part 1
#   returns all heads' weights (theirs returns head 0's, `top_attn`). Part 2: linear_query/linear_keys/linear_values/
#   final_linear -> wq/wk/wv/wo (bias=False; theirs have biases); self.dropout -> attn_dropout; the decoder layer's
#   `self.drop` on the attention output -> resid_dropout; head_count/model_dim/dropout from args;
#   forward(key, value, query, mask) -> forward(q, k, v) returning the output alone.
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


def _future_mask(tgt_len, device):
    future_mask = torch.ones(
        [tgt_len, tgt_len],
        device=device,
        dtype=torch.uint8)
    future_mask = future_mask.triu_(1).view(1, tgt_len, tgt_len)
    # BoolTensor was introduced in pytorch 1.2
    try:
        future_mask = future_mask.bool()
    except AttributeError:
        pass
    return future_mask


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    dim_per_head = query.size(-1)
    mask = _future_mask(query.size(-2), query.device) if is_causal else None

    # 2) Calculate and scale scores.
    query = query / math.sqrt(dim_per_head)
    # batch x num_heads x query_len x key_len
    query_key = torch.matmul(query, key.transpose(2, 3))

    scores = query_key
    scores = scores.float()

    if mask is not None:
        mask = mask.unsqueeze(1)  # [B, 1, 1, T_values]
        scores = scores.masked_fill(mask, -1e18)

    # 3) Apply attention dropout and compute context vectors.
    attn = nn.Softmax(dim=-1)(scores).to(query.dtype)

    context_original = torch.matmul(attn, value)
    return context_original, attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        head_count, model_dim, dropout = args.n_heads, args.dim, args.dropout
        assert model_dim % head_count == 0
        self.dim_per_head = model_dim // head_count
        self.model_dim = model_dim

        super(MultiHeadAttention, self).__init__()
        self.head_count = head_count

        self.wk = nn.Linear(model_dim,
                            head_count * self.dim_per_head, bias=False)
        self.wv = nn.Linear(model_dim,
                            head_count * self.dim_per_head, bias=False)
        self.wq = nn.Linear(model_dim,
                            head_count * self.dim_per_head, bias=False)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = nn.Dropout(dropout)
        self.wo = nn.Linear(model_dim, model_dim, bias=False)
        self.resid_dropout = nn.Dropout(dropout)
        self.is_causal = is_causal

    def forward(self, q, k, v):
        key, value, query = k, v, q
        mask = _future_mask(query.size(1), query.device) if self.is_causal else None

        batch_size = key.size(0)
        dim_per_head = self.dim_per_head
        head_count = self.head_count

        def shape(x):
            """Projection."""
            return x.view(batch_size, -1, head_count, dim_per_head) \
                .transpose(1, 2)

        def unshape(x):
            """Compute context."""
            return x.transpose(1, 2).contiguous() \
                    .view(batch_size, -1, head_count * dim_per_head)

        # 1) Project key, value, and query.
        key = self.wk(key)
        value = self.wv(value)
        query = self.wq(query)
        key = shape(key)
        value = shape(value)

        query = shape(query)

        # 2) Calculate and scale scores.
        query = query / math.sqrt(dim_per_head)
        # batch x num_heads x query_len x key_len
        query_key = torch.matmul(query, key.transpose(2, 3))

        scores = query_key
        scores = scores.float()

        if mask is not None:
            mask = mask.unsqueeze(1)  # [B, 1, 1, T_values]
            scores = scores.masked_fill(mask, -1e18)

        # 3) Apply attention dropout and compute context vectors.
        attn = self.softmax(scores).to(query.dtype)
        drop_attn = self.attn_dropout(attn)

        context_original = torch.matmul(drop_attn, value)

        context = unshape(context_original)

        output = self.wo(context)
        return self.resid_dropout(output)
