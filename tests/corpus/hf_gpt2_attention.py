# source: huggingface/transformers, src/transformers/models/gpt2/modeling_gpt2.py, class GPT2Attention (the eager
#   `_attn` path, `_split_heads`, `_merge_heads`, `forward`); stored commit c44b2d9976e8eafbdcb89cb2710141b2bc9b138f
# url: https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt2/modeling_gpt2.py
# licence: Apache-2.0 (read in the file's own header at that commit: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. Part 1 is `_attn` as a function; Part 2 is GPT2Attention's split/attend/merge/project.
#   `_attn` divides by `value.size(-1) ** 0.5`: the value width, which is the key width in GPT-2 but not in
#   this interface (d_k != d_v is allowed), so Part 1 scales by sqrt(d_v) instead of sqrt(d_k).
# adapted: Part 1: `self.bias[:, :, key_length - query_length : key_length, :key_length]` sliced from a tril built
#   on the query's device (their registered buffer has no place in a function), applied only when is_causal;
#   attention_mask, head_mask, layer-idx scaling, cross-attention and the KV cache dropped; scale_attn_weights taken
#   as True (their config default). Part 2: the fused Conv1D c_attn split into wq/wk/wv and c_proj renamed wo, all
#   nn.Linear(bias=False); config -> args; forward(hidden_states) -> forward(q, k, v) returning the output alone.
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
    attn_weights = torch.matmul(query, key.transpose(-1, -2))

    attn_weights = attn_weights / torch.full(
        [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
    )

    if is_causal:
        query_length, key_length = query.size(-2), key.size(-2)
        bias = torch.tril(torch.ones((key_length, key_length), dtype=torch.bool, device=query.device))
        causal_mask = bias[key_length - query_length : key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
        # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)

    attn_weights = nn.functional.softmax(attn_weights, dim=-1)

    # Downcast (if necessary) back to V's dtype (if in mixed-precision) -- No-Op otherwise
    attn_weights = attn_weights.type(value.dtype)

    attn_output = torch.matmul(attn_weights, value)

    return attn_output, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        max_positions = args.max_seq_len
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions
            ),
            persistent=False,
        )

        self.embed_dim = args.dim
        self.num_heads = args.n_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads})."
            )

        self.wq = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wk = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wv = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wo = nn.Linear(self.embed_dim, self.embed_dim, bias=False)

        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))

        attn_weights = attn_weights / torch.full(
            [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
        )

        if self.is_causal:
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
            mask_value = torch.finfo(attn_weights.dtype).min
            mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
            attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)

        attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def _split_heads(self, tensor, num_heads, attn_head_size):
        """
        Splits hidden_size dim into attn_head_size and num_heads
        """
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        """
        Merges attn_head_size dim and num_attn_heads dim into hidden_size
        """
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, q, k, v):
        query = self._split_heads(self.wq(q), self.num_heads, self.head_dim)
        key = self._split_heads(self.wk(k), self.num_heads, self.head_dim)
        value = self._split_heads(self.wv(v), self.num_heads, self.head_dim)

        attn_output, attn_weights = self._attn(query, key, value)

        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.wo(attn_output)
        attn_output = self.resid_dropout(attn_output)

        return attn_output
