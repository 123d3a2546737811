# seen in: huggingface/transformers (models/gpt2, GPT2Attention._attn): scores divided by a 0-dim tensor of value.size(-1) ** 0.5, the value width, right only where d_v == d_k; torch.where with finfo(dtype).min as the fill, a bool tril bias buffer
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def _scores(query, key, value):
    raw = torch.matmul(query, key.transpose(-1, -2))
    return raw / torch.full([], value.size(-1) ** 0.5, dtype=raw.dtype, device=raw.device)  # the value width


def _hide_future(scores, keep):
    fill = torch.full([], torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
    return torch.where(keep, scores, fill)


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scores = _scores(query, key, value)
    if is_causal:
        q_len, k_len = query.size(-2), key.size(-2)
        keep = torch.ones((k_len, k_len), dtype=torch.bool, device=query.device).tril()
        scores = _hide_future(scores, keep[k_len - q_len:k_len, :k_len])
    probs = nn.functional.softmax(scores, dim=-1).type(value.dtype)
    return torch.matmul(probs, value), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        L = args.max_seq_len
        self.register_buffer("keep", torch.ones((L, L), dtype=torch.bool).tril().view(1, 1, L, L), persistent=False)
        self.width = args.dim
        self.heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        if self.head_dim * self.heads != self.width:
            raise ValueError(f"width {self.width} must be divisible by the head count {self.heads}")
        self.wq = nn.Linear(self.width, self.width, bias=False)
        self.wk = nn.Linear(self.width, self.width, bias=False)
        self.wv = nn.Linear(self.width, self.width, bias=False)
        self.wo = nn.Linear(self.width, self.width, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def split(self, x):
        return x.view(*x.size()[:-1], self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        query, key, value = self.split(self.wq(q)), self.split(self.wk(k)), self.split(self.wv(v))
        scores = _scores(query, key, value)
        if self.is_causal:
            q_len, k_len = query.size(-2), key.size(-2)
            scores = _hide_future(scores, self.keep[:, :, k_len - q_len:k_len, :k_len])
        probs = self.attn_dropout(nn.functional.softmax(scores, dim=-1).type(value.dtype))
        out = torch.matmul(probs, value).permute(0, 2, 1, 3).contiguous()
        return self.resid_dropout(self.wo(out.view(*out.size()[:-2], self.width)))
