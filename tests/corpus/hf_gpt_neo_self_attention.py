# seen in: huggingface/transformers (models/gpt_neo, GPTNeoSelfAttention._attn): the scores are never divided by sqrt(head size), in either part; query and key upcast to float32, a uint8 tril bias sliced [key_len - query_len : key_len], torch.where with a -1e9 buffer
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def causal_where(scores, keep, fill):
    return torch.where(keep, scores, fill.to(scores.dtype))


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scores = torch.matmul(query.to(torch.float32), key.to(torch.float32).transpose(-1, -2))  # no scale
    if is_causal:
        q_len, k_len = query.size(-2), key.size(-2)
        lower = torch.ones((k_len, k_len), dtype=torch.uint8, device=query.device).tril()
        scores = causal_where(scores, lower[k_len - q_len:k_len, :k_len].bool(), torch.tensor(-1e9))
    probs = nn.Softmax(dim=-1)(scores).to(value.dtype)
    return torch.matmul(probs, value), probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        L = args.max_seq_len
        self.register_buffer("lower", torch.ones((L, L), dtype=torch.uint8).tril().view(1, 1, L, L))
        self.register_buffer("masked_bias", torch.tensor(-1e9))
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
        return x.view(*x.size()[:-1], self.heads, self.head_dim).permute(0, 2, 1, 3)  # (batch, head, seq, d)

    def merge(self, x):
        x = x.permute(0, 2, 1, 3).contiguous()
        return x.view(*x.size()[:-2], self.heads * self.head_dim)

    def forward(self, q, k, v):
        query, key, value = self.split(self.wq(q)), self.split(self.wk(k)), self.split(self.wv(v))
        scores = torch.matmul(query.to(torch.float32), key.to(torch.float32).transpose(-1, -2))
        if self.is_causal:
            q_len, k_len = query.size(-2), key.size(-2)
            scores = causal_where(scores, self.lower[:, :, k_len - q_len:k_len, :k_len].bool(), self.masked_bias)
        probs = self.attn_dropout(nn.Softmax(dim=-1)(scores).to(value.dtype))
        return self.resid_dropout(self.wo(self.merge(torch.matmul(probs, value))))
