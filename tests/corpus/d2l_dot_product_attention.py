# source: d2l-ai/d2l-zh, chapter_attention-mechanisms/attention-scoring-functions.md, class DotProductAttention
#   (same code as d2l-en's `d2l.DotProductAttention` in d2l/torch.py)
# url: https://github.com/d2l-ai/d2l-zh/blob/master/chapter_attention-mechanisms/attention-scoring-functions.md
# licence: the book's sample code is MIT-0, its text CC BY-SA 4.0 (the repository's LICENSE-SAMPLECODE / LICENSE)
# theirs: Part 1: `torch.bmm` and `keys.transpose(1,2)` take exactly one batch dim (3-D tensors only).
#   Part 2 is written plainly in the same style (heads folded into the batch, as d2l's MultiHeadAttention does).
# adapted: the module's forward became the function; valid_lens masking replaced by the causal mask, filled with
#   d2l's masked_softmax value -1e6; the weights returned (d2l keeps them in self.attention_weights).
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(queries, keys, values, is_causal: bool = True):
    d = queries.shape[-1]
    # 设置transpose_b=True为了交换keys的最后两个维度
    scores = torch.bmm(queries, keys.transpose(1,2)) / math.sqrt(d)
    if is_causal:
        n = scores.shape[-1]
        future = torch.ones(n, n, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, -1e6)
    attention_weights = nn.functional.softmax(scores, dim=-1)
    return torch.bmm(attention_weights, values), attention_weights


def transpose_qkv(X, num_heads):
    """为了多注意力头的并行计算而变换形状"""
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    X = X.permute(0, 2, 1, 3)
    return X.reshape(-1, X.shape[2], X.shape[3])


def transpose_output(X, num_heads):
    """逆转transpose_qkv函数的操作"""
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        self.num_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, queries, keys, values):
        queries = transpose_qkv(self.wq(queries), self.num_heads)
        keys = transpose_qkv(self.wk(keys), self.num_heads)
        values = transpose_qkv(self.wv(values), self.num_heads)
        d = queries.shape[-1]
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)
        if self.is_causal:
            n = scores.shape[-1]
            scores = scores.masked_fill(self.mask[:n, :n], -1e6)
        attention_weights = self.attn_dropout(nn.functional.softmax(scores, dim=-1))
        output = torch.bmm(attention_weights, values)
        return self.resid_dropout(self.wo(transpose_output(output, self.num_heads)))
