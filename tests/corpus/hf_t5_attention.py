# source: huggingface/transformers, src/transformers/models/t5/modeling_t5.py, class T5Attention (forward, with
#   has_relative_attention_bias=False) and T5Stack._prepare_4d_causal_attention_mask_with_cache_position; stored
#   commit 6b8b757dfcb582379a64f013cdce46c43629f2b0
# url: https://github.com/huggingface/transformers/blob/main/src/transformers/models/t5/modeling_t5.py
# licence: Apache-2.0 (read in the file's own header at that commit: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. T5 never scales the scores ("Mesh TensorFlow initialization to avoid scaling before softmax": the
#   1/sqrt(d_kv) is folded into the q weights' init), so with any other weights it is attention without 1/sqrt(d_k).
#   `key_states.transpose(3, 2)` and the (1, n_heads, T, T) position bias are written for 4-D (batch, heads, T, d)
#   only. The causal mask is additive: finfo(dtype).min above the diagonal, built with device=, expanded to
#   (batch, 1, T, T); softmax upcast to float32. Part 1 is forward's lines from `scores = ...` to `attn_output`.
# adapted: relative position bias, pruned heads, head mask, KV cache and cross-attention dropped (the layer without
#   has_relative_attention_bias adds the zero position bias kept here); the causal mask made from their helper with
#   cache_position = arange(T) and no padding mask, added only when is_causal; n_heads read from the query's shape in
#   Part 1. Part 2: q/k/v/o -> wq/wk/wv/wo (already bias=False); config -> args (d_kv = dim // n_heads);
#   `nn.functional.dropout(p=self.dropout, training=self.training)` -> self.attn_dropout; the dropout T5LayerSelfAttention
#   applies to the output -> resid_dropout; forward(hidden_states, mask, ...) -> forward(q, k, v) returning the output.
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def _prepare_4d_causal_attention_mask_with_cache_position(
    attention_mask: torch.Tensor,
    sequence_length: int,
    target_length: int,
    dtype: torch.dtype,
    device: torch.device,
    cache_position: torch.Tensor,
    batch_size: int,
    **kwargs,
):
    if attention_mask is not None and attention_mask.dim() == 4:
        # In this case we assume that the mask comes already in inverted form and requires no inversion or slicing.
        causal_mask = attention_mask
    else:
        min_dtype = torch.finfo(dtype).min
        causal_mask = torch.full(
            (sequence_length, target_length), fill_value=min_dtype, dtype=dtype, device=device
        )
        if sequence_length != 1:
            causal_mask = torch.triu(causal_mask, diagonal=1)
        causal_mask *= torch.arange(target_length, device=device) > cache_position.reshape(-1, 1)
        causal_mask = causal_mask[None, None, :, :].expand(batch_size, 1, -1, -1)
        if attention_mask is not None:
            causal_mask = causal_mask.clone()  # copy to contiguous memory for in-place edit
            mask_length = attention_mask.shape[-1]
            padding_mask = causal_mask[:, :, :, :mask_length] + attention_mask[:, None, None, :].to(
                causal_mask.device
            )
            padding_mask = padding_mask == 0
            causal_mask[:, :, :, :mask_length] = causal_mask[:, :, :, :mask_length].masked_fill(
                padding_mask, min_dtype
            )

    return causal_mask


def _causal_mask(query_states):
    seq_length = query_states.shape[-2]
    cache_position = torch.arange(seq_length, device=query_states.device)
    return _prepare_4d_causal_attention_mask_with_cache_position(
        None, seq_length, seq_length, query_states.dtype, query_states.device, cache_position,
        batch_size=query_states.shape[0],
    )


def scaled_dot_product_attention(query_states, key_states, value_states, is_causal: bool = True):
    seq_length = query_states.shape[-2]
    n_heads = query_states.shape[1]
    mask = _causal_mask(query_states) if is_causal else None

    # compute scores, equivalent of torch.einsum("bnqd,bnkd->bnqk", query_states, key_states), compatible with onnx op>9
    scores = torch.matmul(query_states, key_states.transpose(3, 2))

    key_length = key_states.shape[-2]
    position_bias = torch.zeros(
        (1, n_heads, seq_length, key_length), device=scores.device, dtype=scores.dtype
    )
    if mask is not None:
        causal_mask = mask[:, :, :, : key_states.shape[-2]]
        position_bias = position_bias + causal_mask

    scores += position_bias

    # (batch_size, n_heads, seq_length, key_length)
    attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)

    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.d_model = args.dim
        self.key_value_proj_dim = args.dim // args.n_heads
        self.n_heads = args.n_heads
        self.dropout = args.dropout
        self.inner_dim = self.n_heads * self.key_value_proj_dim
        self.is_causal = is_causal

        # Mesh TensorFlow initialization to avoid scaling before softmax
        self.wq = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.wk = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.wv = nn.Linear(self.d_model, self.inner_dim, bias=False)
        self.wo = nn.Linear(self.inner_dim, self.d_model, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        # Input is (batch_size, seq_length, dim)
        batch_size, seq_length = q.shape[:2]
        mask = None
        if self.is_causal:
            cache_position = torch.arange(seq_length, device=q.device)
            mask = _prepare_4d_causal_attention_mask_with_cache_position(
                None, seq_length, seq_length, q.dtype, q.device, cache_position, batch_size=batch_size
            )

        query_states = self.wq(q)
        query_states = query_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        key_states = self.wk(k)
        value_states = self.wv(v)
        key_states = key_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)
        value_states = value_states.view(batch_size, -1, self.n_heads, self.key_value_proj_dim).transpose(1, 2)

        # compute scores, equivalent of torch.einsum("bnqd,bnkd->bnqk", query_states, key_states), compatible with onnx op>9
        scores = torch.matmul(query_states, key_states.transpose(3, 2))

        key_length = key_states.shape[-2]
        position_bias = torch.zeros(
            (1, self.n_heads, seq_length, key_length), device=scores.device, dtype=scores.dtype
        )
        if mask is not None:
            causal_mask = mask[:, :, :, : key_states.shape[-2]]
            position_bias = position_bias + causal_mask

        scores += position_bias

        # (batch_size, n_heads, seq_length, key_length)
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_weights = self.attn_dropout(attn_weights)

        attn_output = torch.matmul(attn_weights, value_states)

        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.view(batch_size, -1, self.inner_dim)
        attn_output = self.wo(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return attn_output
