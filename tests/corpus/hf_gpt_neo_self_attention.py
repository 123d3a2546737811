# source: huggingface/transformers, src/transformers/models/gpt_neo/modeling_gpt_neo.py, class GPTNeoSelfAttention
#   (`_attn`, `_split_heads`, `_merge_heads`, `forward`); stored commit 002fb3e7a2db86cef2160e206c878ff895b74ef0
# url: https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt_neo/modeling_gpt_neo.py
# licence: Apache-2.0 (read in the file's own header at that commit: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. GPT-Neo never divides the scores by sqrt(head_dim) (the released checkpoints were trained that
#   way, so for GPT-Neo it is right; against this exercise's interface it is a missing scale, in both parts).
# adapted: Part 1 is `_attn` as a function: `self.bias[...]` sliced from a uint8 tril built on the query's device,
#   `self.masked_bias` (a -1e9 scalar buffer) written inline as the scalar tensor it is, applied only when is_causal;
#   attention_mask/head_mask/layer_past dropped. Part 2: q_proj/k_proj/v_proj/out_proj -> wq/wk/wv/wo
#   (out_proj bias=False; theirs has a bias); config -> args; the "global" attention type only;
#   forward(hidden_states) -> forward(q, k, v) returning the output alone; the causal where applied only when causal.
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
    # Keep the attention weights computation in fp32 to avoid overflow issues
    query = query.to(torch.float32)
    key = key.to(torch.float32)

    attn_weights = torch.matmul(query, key.transpose(-1, -2))

    if is_causal:
        query_length, key_length = query.size(-2), key.size(-2)
        bias = torch.tril(torch.ones((key_length, key_length), dtype=torch.uint8, device=query.device))
        causal_mask = bias[key_length - query_length : key_length, :key_length].bool()
        attn_weights = torch.where(causal_mask, attn_weights, torch.tensor(-1e9).to(attn_weights.dtype))

    attn_weights = nn.Softmax(dim=-1)(attn_weights)
    attn_weights = attn_weights.to(value.dtype)

    attn_output = torch.matmul(attn_weights, value)

    return attn_output, attn_weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()

        max_positions = args.max_seq_len
        bias = torch.tril(torch.ones((max_positions, max_positions), dtype=torch.uint8)).view(
            1, 1, max_positions, max_positions
        )

        self.register_buffer("bias", bias)
        self.register_buffer("masked_bias", torch.tensor(-1e9))

        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

        self.embed_dim = args.dim
        self.num_heads = args.n_heads
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"embed_dim must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`: {self.num_heads})."
            )

        self.wk = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wv = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wq = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.wo = nn.Linear(self.embed_dim, self.embed_dim, bias=False)
        self.is_causal = is_causal

    def _split_heads(self, tensor, num_heads, attn_head_size):
        """
        Splits hidden_size dim into attn_head_size and num_heads
        """
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(*new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        """
        Merges attn_head_size dim and num_attn_heads dim into hidden_size
        """
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def _attn(self, query, key, value):
        # Keep the attention weights computation in fp32 to avoid overflow issues
        query = query.to(torch.float32)
        key = key.to(torch.float32)

        attn_weights = torch.matmul(query, key.transpose(-1, -2))

        if self.is_causal:
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length].bool()
            attn_weights = torch.where(causal_mask, attn_weights, self.masked_bias.to(attn_weights.dtype))

        attn_weights = nn.Softmax(dim=-1)(attn_weights)
        attn_weights = attn_weights.to(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)

        attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def forward(self, q, k, v):

        query = self.wq(q)
        key = self.wk(k)
        value = self.wv(v)

        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)

        attn_output, attn_weights = self._attn(query, key, value)

        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.wo(attn_output)
        attn_output = self.resid_dropout(attn_output)

        return attn_output
