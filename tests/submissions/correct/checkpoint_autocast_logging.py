# style: the attention core under torch.utils.checkpoint, autocast switched off around it, logging and a debug print
import logging
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

log = logging.getLogger("attention")


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    log.debug("sdpa %s %s", tuple(Q.shape), Q.dtype)
    with torch.autocast(device_type=Q.device.type, enabled=False):
        scores = Q.float() @ K.float().transpose(-2, -1) / math.sqrt(Q.shape[-1])
        if is_causal:
            T = Q.shape[-2]
            keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=Q.device))
            scores = scores.masked_fill(~keep, float("-inf"))
        weights = scores.softmax(dim=-1).to(Q.dtype)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.n_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("bias", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len))
                             .view(1, 1, args.max_seq_len, args.max_seq_len))

    def _core(self, q, k, v):
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        return self.attn_dropout(F.softmax(att, dim=-1)) @ v  # (B, H, T, d)

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2)
        y = checkpoint(self._core, q, k, v, use_reentrant=False) if self.training else self._core(q, k, v)
        print("forward", tuple(y.shape)) if T > 1000 else None
        return self.resid_dropout(self.wo(y.transpose(1, 2).contiguous().view(B, T, C)))
