# seen in: huggingface/transformers (models/gptj, GPTJAttention._attn): scores in float32, the mask applied through torch.where with finfo.min BEFORE dividing by a 0-dim CPU tensor scale_attn = sqrt(head_dim), bool tril bias buffer, rotary-style split then permute
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def _masked_scaled(query, key, keep, is_causal, scale):
    scores = torch.matmul(query.to(torch.float32), key.to(torch.float32).transpose(-1, -2))
    if is_causal:
        lowest = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype).to(scores.device)
        scores = torch.where(keep, scores, lowest)
    return scores / scale  # a 0-dim CPU tensor, allowed next to any device


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    scale = torch.sqrt(torch.tensor(query.size(-1), dtype=torch.float32)).to(torch.get_default_dtype())
    q_len, k_len = query.size(-2), key.size(-2)
    keep = torch.ones((k_len, k_len), dtype=torch.bool, device=query.device).tril()[k_len - q_len:k_len, :k_len]
    weights = nn.functional.softmax(_masked_scaled(query, key, keep, is_causal, scale), dim=-1).to(value.dtype)
    return torch.matmul(weights, value), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        L = args.max_seq_len
        self.register_buffer("keep", torch.ones((L, L), dtype=torch.bool).tril().view(1, 1, L, L), persistent=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.width = args.dim
        self.heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        if self.head_dim * self.heads != self.width:
            raise ValueError(f"width {self.width} must be divisible by the head count {self.heads}")
        self.scale_attn = torch.sqrt(torch.tensor(self.head_dim, dtype=torch.float32)).to(torch.get_default_dtype())
        self.wk = nn.Linear(self.width, self.width, bias=False)
        self.wv = nn.Linear(self.width, self.width, bias=False)
        self.wq = nn.Linear(self.width, self.width, bias=False)
        self.wo = nn.Linear(self.width, self.width, bias=False)

    def split(self, x, rotary):
        x = x.view(*x.size()[:-1], self.heads, self.head_dim)  # (batch, seq, head, d)
        return x if rotary else x.permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        query = self.split(self.wq(q), True).permute(0, 2, 1, 3)  # rotary would act here, before the permute
        key = self.split(self.wk(k), True).permute(0, 2, 1, 3)
        value = self.split(self.wv(v), False)
        q_len, k_len = query.size(-2), key.size(-2)
        keep = self.keep[:, :, k_len - q_len:k_len, :k_len]
        weights = nn.functional.softmax(_masked_scaled(query, key, keep, self.is_causal, self.scale_attn), dim=-1)
        out = torch.matmul(self.attn_dropout(weights.to(value.dtype)), value).permute(0, 2, 1, 3).contiguous()
        return self.resid_dropout(self.wo(out.view(*out.size()[:-2], self.width)))
