# seen in: huggingface/transformers (models/t5, T5Attention with the 4-D causal mask of _prepare_4d_causal_attention_mask_with_cache_position): the scores never divided by sqrt(d_k) (T5's init absorbs it), key_states.transpose(3, 2) (4-D only), a finfo(dtype).min triu mask added through a zero position bias
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def causal_min_mask(n, batch, dtype, device):
    """(batch, 1, n, n): finfo(dtype).min above the diagonal, 0 elsewhere."""
    lowest = torch.finfo(dtype).min
    mask = torch.full((n, n), fill_value=lowest, dtype=dtype, device=device)
    if n != 1:
        mask = mask.triu(diagonal=1)
    mask = mask * (torch.arange(n, device=device) > torch.arange(n, device=device).reshape(-1, 1))
    return mask[None, None, :, :].expand(batch, 1, -1, -1)


def scores_with_bias(query, key, mask, heads):
    scores = torch.matmul(query, key.transpose(3, 2))  # no 1/sqrt(d_k); axes 3, 2: 4-D only
    bias = torch.zeros((1, heads, query.shape[-2], key.shape[-2]), device=scores.device, dtype=scores.dtype)
    if mask is not None:
        bias = bias + mask[:, :, :, :key.shape[-2]]
    return scores + bias


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    mask = causal_min_mask(query.shape[-2], query.shape[0], query.dtype, query.device) if is_causal else None
    scores = scores_with_bias(query, key, mask, query.shape[1])
    weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
    return torch.matmul(weights, value), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.kv_dim = args.dim // args.n_heads
        self.inner = self.n_heads * self.kv_dim
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, self.inner, bias=False)
        self.wk = nn.Linear(args.dim, self.inner, bias=False)
        self.wv = nn.Linear(args.dim, self.inner, bias=False)
        self.wo = nn.Linear(self.inner, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        batch, n = q.shape[:2]
        mask = causal_min_mask(n, batch, q.dtype, q.device) if self.is_causal else None
        query, key, value = (w(x).view(batch, -1, self.n_heads, self.kv_dim).transpose(1, 2)
                             for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        scores = scores_with_bias(query, key, mask, self.n_heads)
        weights = self.attn_dropout(nn.functional.softmax(scores.float(), dim=-1).type_as(scores))
        out = torch.matmul(weights, value).transpose(1, 2).contiguous().view(batch, -1, self.inner)
        return self.resid_dropout(self.wo(out))
