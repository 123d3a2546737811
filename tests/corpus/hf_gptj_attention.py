# source: huggingface/transformers, src/transformers/models/gptj/modeling_gptj.py, class GPTJAttention (the eager
#   `_attn` path, `_split_heads`, `_merge_heads`, `forward`); stored commit cb6cd7e984c1482cfcf62aeb3b2921bfeca71e95
# url: https://github.com/huggingface/transformers/blob/main/src/transformers/models/gptj/modeling_gptj.py
# licence: Apache-2.0 (read in the file's own header at that commit: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. Part 1 is `_attn` as a function; Part 2 is GPTJAttention's split/attend/merge/project. The
#   scores are computed in float32 whatever the input dtype (`query.to(torch.float32)`), masked BEFORE scaling with
#   torch.where and a 0-dim finfo(float32).min tensor, then divided by `scale_attn`, a 0-dim float32 tensor
#   sqrt(head_dim) made on the CPU in __init__; the weights are cast back to the value's dtype after softmax.
# adapted: Part 1: `self.bias[:, :, key_length - query_length : key_length, :key_length]` sliced from a tril built on
#   the query's device (their registered buffer has no place in a function), scale_attn computed as theirs from the
#   query's last dim; attention_mask and head_mask dropped. Both parts: the causal mask applied only when is_causal
#   (theirs always). Part 2: the rotary position embedding (embed_positions, sin/cos, rotary_dim) and the KV cache
#   dropped; q_proj/k_proj/v_proj/out_proj -> wq/wk/wv/wo (already bias=False); config -> args (max_position_embeddings
#   -> max_seq_len, attn_pdrop/resid_pdrop -> dropout); forward(hidden_states, ...) -> forward(q, k, v) returning the
#   output alone.
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scale_attn = torch.sqrt(torch.tensor(query.size(-1), dtype=torch.float32)).to(torch.get_default_dtype())

    # compute causal mask from causal mask buffer
    query_length, key_length = query.size(-2), key.size(-2)
    bias = torch.tril(torch.ones((key_length, key_length), dtype=torch.bool, device=query.device))
    causal_mask = bias[key_length - query_length : key_length, :key_length]

    # Keep the attention weights computation in fp32 to avoid overflow issues
    query = query.to(torch.float32)
    key = key.to(torch.float32)

    attn_weights = torch.matmul(query, key.transpose(-1, -2))

    if is_causal:
        mask_value = torch.finfo(attn_weights.dtype).min
        # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
        # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
        mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)

    attn_weights = attn_weights / scale_attn

    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_weights = attn_weights.to(value.dtype)

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

        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

        self.is_causal = is_causal

        self.embed_dim = args.dim
        self.num_attention_heads = args.n_heads
        self.head_dim = self.embed_dim // self.num_attention_heads
        if self.head_dim * self.num_attention_heads != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_attention_heads (got `embed_dim`: {self.embed_dim} and"
                f" `num_attention_heads`: {self.num_attention_heads})."
            )
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())

        self.wk = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wv = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wq = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wo = nn.Linear(self.embed_dim, self.embed_dim, bias=False)

    def _split_heads(self, tensor, num_attention_heads, attn_head_size, rotary):
        """
        Splits hidden dim into attn_head_size and num_attention_heads
        """
        new_shape = tensor.size()[:-1] + (num_attention_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        if rotary:
            return tensor
        if len(tensor.shape) == 5:
            return tensor.permute(0, 1, 3, 2, 4)  # (batch, blocks, head, block_length, head_features)
        elif len(tensor.shape) == 4:
            return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)
        else:
            raise ValueError(f"Input tensor rank should be one of [4, 5], but is: {len(tensor.shape)}")

    def _merge_heads(self, tensor, num_attention_heads, attn_head_size):
        """
        Merges attn_head_size dim and num_attn_heads dim into hidden dim
        """
        if len(tensor.shape) == 5:
            tensor = tensor.permute(0, 1, 3, 2, 4).contiguous()
        elif len(tensor.shape) == 4:
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
        else:
            raise ValueError(f"Input tensor rank should be one of [4, 5], but is: {len(tensor.shape)}")
        new_shape = tensor.size()[:-2] + (num_attention_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        # compute causal mask from causal mask buffer
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]

        # Keep the attention weights computation in fp32 to avoid overflow issues
        query = query.to(torch.float32)
        key = key.to(torch.float32)

        attn_weights = torch.matmul(query, key.transpose(-1, -2))

        if self.is_causal:
            mask_value = torch.finfo(attn_weights.dtype).min
            # Need to be a tensor, otherwise we get error: `RuntimeError: expected scalar type float but found double`.
            # Need to be on the same device, otherwise `RuntimeError: ..., x and y to be on the same device`
            mask_value = torch.tensor(mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
            attn_weights = torch.where(causal_mask, attn_weights, mask_value)

        attn_weights = attn_weights / self.scale_attn

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)

        attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def forward(self, q, k, v):
        query = self.wq(q)
        key = self.wk(k)
        value = self.wv(v)

        query = self._split_heads(query, self.num_attention_heads, self.head_dim, True)
        key = self._split_heads(key, self.num_attention_heads, self.head_dim, True)
        value = self._split_heads(value, self.num_attention_heads, self.head_dim, False)

        key = key.permute(0, 2, 1, 3)
        query = query.permute(0, 2, 1, 3)

        # compute self-attention: V x Softmax(QK^T)
        attn_output, attn_weights = self._attn(query, key, value)

        attn_output = self._merge_heads(attn_output, self.num_attention_heads, self.head_dim)
        attn_output = self.wo(attn_output)
        attn_output = self.resid_dropout(attn_output)

        return attn_output
