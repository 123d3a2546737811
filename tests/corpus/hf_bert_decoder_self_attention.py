# source: huggingface/transformers, src/transformers/models/bert/modeling_bert.py, classes BertSelfAttention and
#   BertSelfOutput (stored commit 004ad5f50b627b59bf0d581c31bc0052b6cfd40b), with the causal mask of
#   ModuleUtilsMixin.get_extended_attention_mask's `config.is_decoder` branch (src/transformers/modeling_utils.py, the
#   same 4.x code: arange comparison, then `(1.0 - mask) * -10000.0`; the stored copy read names no commit)
# url: https://github.com/huggingface/transformers/blob/004ad5f50b627b59bf0d581c31bc0052b6cfd40b/src/transformers/models/bert/modeling_bert.py
# licence: Apache-2.0 (read in the file's own header: "Licensed under the Apache License, Version 2.0")
# theirs: both parts. Part 1 is BertSelfAttention.forward's lines from the scores to the context (matmul with
#   transpose(-1, -2), / sqrt(head size), + the additive mask, Softmax(dim=-1)) with the decoder mask as BertModel
#   builds it: 1 where key <= query, then (1 - mask) * -10000.0 added to the scores. Part 2 is BertSelfAttention
#   (query/key/value, transpose_for_scores, permute back) followed by BertSelfOutput's dense and dropout.
# adapted: Part 1 lifted into a function with the mask built for one sequence (theirs `repeat`s it over the batch and
#   multiplies in the padding mask, which the interface has none of) on the query's device, applied only when
#   is_causal; attention_head_size -> query_layer.size(-1); returns the weights too. Part 2: query/key/value/dense -> wq/wk/wv/wo (bias=False; theirs have biases),
#   dropout -> attn_dropout, BertSelfOutput's dropout -> resid_dropout, its LayerNorm(hidden + input) residual dropped
#   (it belongs to the block, not to the attention); the mask built in forward the same way (theirs comes in from the
#   model); relative position embeddings, head_mask, cross-attention and past_key_value dropped; config -> args;
#   forward(hidden_states) -> forward(q, k, v) returning the output alone.
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


def scaled_dot_product_attention(query_layer, key_layer, value_layer, is_causal: bool = True):
    # Take the dot product between "query" and "key" to get the raw attention scores.
    attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
    attention_scores = attention_scores / math.sqrt(query_layer.size(-1))
    if is_causal:
        seq_length = query_layer.size(-2)
        seq_ids = torch.arange(seq_length, device=query_layer.device)
        causal_mask = seq_ids[None, :].repeat(seq_length, 1) <= seq_ids[:, None]
        extended_attention_mask = causal_mask.to(dtype=attention_scores.dtype)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0
        # Apply the attention mask is (precomputed for all layers in BertModel forward() function)
        attention_scores = attention_scores + extended_attention_mask

    # Normalize the attention scores to probabilities.
    attention_probs = nn.Softmax(dim=-1)(attention_scores)

    context_layer = torch.matmul(attention_probs, value_layer)
    return context_layer, attention_probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        if args.dim % args.n_heads != 0:
            raise ValueError(
                f"The hidden size ({args.dim}) is not a multiple of the number of attention "
                f"heads ({args.n_heads})"
            )

        self.num_attention_heads = args.n_heads
        self.attention_head_size = int(args.dim / args.n_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size

        self.wq = nn.Linear(args.dim, self.all_head_size, bias=False)
        self.wk = nn.Linear(args.dim, self.all_head_size, bias=False)
        self.wv = nn.Linear(args.dim, self.all_head_size, bias=False)

        self.attn_dropout = nn.Dropout(args.dropout)

        # BertSelfOutput
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.resid_dropout = nn.Dropout(args.dropout)

        self.is_decoder = is_causal

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(*new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        mixed_query_layer = self.wq(q)

        key_layer = self.transpose_for_scores(self.wk(k))
        value_layer = self.transpose_for_scores(self.wv(v))

        query_layer = self.transpose_for_scores(mixed_query_layer)

        # Take the dot product between "query" and "key" to get the raw attention scores.
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))

        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if self.is_decoder:
            batch_size, seq_length = q.shape[:2]
            seq_ids = torch.arange(seq_length, device=q.device)
            causal_mask = seq_ids[None, None, :].repeat(batch_size, seq_length, 1) <= seq_ids[None, :, None]
            extended_attention_mask = causal_mask[:, None, :, :].to(dtype=attention_scores.dtype)  # fp16 compatibility
            extended_attention_mask = (1.0 - extended_attention_mask) * -10000.0
            # Apply the attention mask is (precomputed for all layers in BertModel forward() function)
            attention_scores = attention_scores + extended_attention_mask

        # Normalize the attention scores to probabilities.
        attention_probs = nn.Softmax(dim=-1)(attention_scores)

        # This is actually dropping out entire tokens to attend to, which might
        # seem a bit unusual, but is taken from the original Transformer paper.
        attention_probs = self.attn_dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)

        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(*new_context_layer_shape)

        # BertSelfOutput (its LayerNorm(hidden_states + input_tensor) residual belongs to the block)
        hidden_states = self.wo(context_layer)
        hidden_states = self.resid_dropout(hidden_states)
        return hidden_states
