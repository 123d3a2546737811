# seen in: huggingface/transformers (models/bert, BertSelfAttention with get_extended_attention_mask's decoder branch): a causal keep-mask from an arange comparison, turned into an additive (1 - mask) * -10000.0 bias; heads by view + permute
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


def decoder_bias(n, dtype, device):
    """0 where key <= query, -10000 elsewhere."""
    ids = torch.arange(n, device=device)
    allowed = ids[None, :].repeat(n, 1) <= ids[:, None]
    return (1.0 - allowed.to(dtype=dtype)) * -10000.0


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(query.size(-1))
    if is_causal:
        scores = scores + decoder_bias(query.size(-2), scores.dtype, query.device)
    probs = nn.Softmax(dim=-1)(scores)
    return torch.matmul(probs, value), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        if args.dim % args.n_heads != 0:
            raise ValueError(f"width {args.dim} is not a multiple of the head count {args.n_heads}")
        self.heads = args.n_heads
        self.head_size = int(args.dim / args.n_heads)
        self.all_heads = self.heads * self.head_size
        self.wq = nn.Linear(args.dim, self.all_heads, bias=False)
        self.wk = nn.Linear(args.dim, self.all_heads, bias=False)
        self.wv = nn.Linear(args.dim, self.all_heads, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_decoder = is_causal

    def for_scores(self, x):
        return x.view(*x.size()[:-1], self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        query, key, value = self.for_scores(self.wq(q)), self.for_scores(self.wk(k)), self.for_scores(self.wv(v))
        scores = torch.matmul(query, key.transpose(-1, -2)) / math.sqrt(self.head_size)
        if self.is_decoder:
            scores = scores + decoder_bias(q.shape[1], scores.dtype, q.device)[None, None]
        probs = self.attn_dropout(nn.Softmax(dim=-1)(scores))
        context = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous()
        context = context.view(*context.size()[:-2], self.all_heads)
        return self.resid_dropout(self.wo(context))
