# source: huggingface/transformers, src/transformers/models/ctrl/modeling_ctrl.py, function
#   scaled_dot_product_attention and class MultiHeadAttention, with the causal mask as CTRLModel.forward builds it
#   (`torch.triu(torch.ones(n, n), 1).to(device)`); stored commit 00b676f8f0489b88652a31d70751cc540dd06305
# url: https://github.com/huggingface/transformers/blob/00b676f8f0489b88652a31d70751cc540dd06305/src/transformers/models/ctrl/modeling_ctrl.py
# licence: Apache-2.0 (read in the file's own header at that commit: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. Part 1 is their scaled_dot_product_attention: `torch.matmul(q, k.permute(0, 1, 3, 2))` (a
#   four-dims-only transpose), divided by `np.sqrt(dk)` with dk = k.shape[-1], then the float triu(1) mask sliced
#   `mask[ns - nd : ns, :ns]` times -1e4 added in place to the scores, softmax(dim=-1). Part 2 is their
#   MultiHeadAttention: Wq/Wk/Wv, split_into_heads (reshape(batch, -1, heads, depth), permute), that same function,
#   permute back, reshape(batch, -1, d_model_size), dense.
# adapted: Part 1: the mask built from the key length on the query's device (theirs comes from CTRLModel.forward,
#   built there with .to(device)), only when is_causal; attention_mask and head_mask dropped; their function body kept
#   as `_attention(q, k, v, mask, dropout)` for Part 2 to call. Part 2: the model's triu mask registered as a buffer
#   `mask` of size max_seq_len (their slice reads its top-left corner) and passed only when causal; Wq/Wk/Wv/dense ->
#   wq/wk/wv/wo (bias=False; theirs have biases); their code has no dropout: attn_dropout applied to the weights
#   (where head_mask was) and resid_dropout to the output; prune_heads, layer_past and the cache dropped;
#   (d_model_size, num_heads) -> args; forward(v, k, q, mask, ...) -> forward(q, k, v) returning the output alone.
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


def _attention(q, k, v, mask, dropout=None):
    # calculate attention
    matmul_qk = torch.matmul(q, k.permute(0, 1, 3, 2))

    dk = k.shape[-1]
    scaled_attention_logits = matmul_qk / np.sqrt(dk)

    if mask is not None:
        nd, ns = scaled_attention_logits.size(-2), scaled_attention_logits.size(-1)
        scaled_attention_logits += mask[ns - nd : ns, :ns] * -1e4

    attention_weights = torch.softmax(scaled_attention_logits, dim=-1)

    if dropout is not None:
        attention_weights = dropout(attention_weights)

    output = torch.matmul(attention_weights, v)

    return output, attention_weights


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    seq_len = k.shape[-2]
    mask = torch.triu(torch.ones(seq_len, seq_len), 1).to(q.device) if is_causal else None
    return _attention(q, k, v, mask)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.d_model_size = args.dim
        self.is_causal = is_causal

        self.depth = int(args.dim / self.num_heads)

        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)

        self.wo = nn.Linear(args.dim, args.dim, bias=False)

        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.register_buffer("mask", torch.triu(torch.ones(args.max_seq_len, args.max_seq_len), 1))

    def split_into_heads(self, x, batch_size):
        x = x.reshape(batch_size, -1, self.num_heads, self.depth)
        return x.permute([0, 2, 1, 3])

    def forward(self, q, k, v):
        batch_size = q.shape[0]

        q = self.wq(q)
        k = self.wk(k)
        v = self.wv(v)

        q = self.split_into_heads(q, batch_size)
        k = self.split_into_heads(k, batch_size)
        v = self.split_into_heads(v, batch_size)

        mask = self.mask if self.is_causal else None
        output = _attention(q, k, v, mask, self.attn_dropout)
        scaled_attention = output[0].permute([0, 2, 1, 3])
        original_size_attention = scaled_attention.reshape(batch_size, -1, self.d_model_size)
        output = self.wo(original_size_attention)
        output = self.resid_dropout(output)
        return output
