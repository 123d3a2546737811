"""A solution of the second lab (`kv_cache`), written from its fixed interface, for the decode chain's tests
(tests/graph/test_decode_chain.py). Its text is what those tests load as a hand-in, as the worker loads one;
mutants are this text with one line changed. The lab's real solution is built from source/kv_cache/."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    n_kv_heads: int = 2
    max_seq_len: int = 256
    max_batch_size: int = 4


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    if n_rep == 1:
        return x
    B, H_kv, T, d = x.shape
    return x[:, :, None, :, :].expand(B, H_kv, n_rep, T, d).reshape(B, H_kv * n_rep, T, d)


class KVCache:
    def __init__(self, max_batch_size: int, max_seq_len: int, n_kv_heads: int, head_dim: int, device=None,
                 dtype=torch.float32):
        shape = (max_batch_size, n_kv_heads, max_seq_len, head_dim)
        self.cache_k = torch.zeros(shape, device=device, dtype=dtype)
        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)

    def update(self, start_pos: int, k: torch.Tensor, v: torch.Tensor):
        B, _, T, _ = k.shape
        self.cache_k[:B, :, start_pos:start_pos + T] = k
        self.cache_v[:B, :, start_pos:start_pos + T] = v
        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0
        self.n_heads, self.n_kv_heads = args.n_heads, args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.n_rep = args.n_heads // args.n_kv_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, cache=None, start_pos=0):
        B, T, _ = x.shape  # batch, new positions, model width
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)  # (B, H_kv, start_pos + T, d)
        keys, values = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, S, d)
        S = keys.shape[2]
        scores = q @ keys.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, S)
        future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(start_pos + 1)
        weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        y = (weights @ values).transpose(1, 2).contiguous().view(B, T, -1)  # (B, T, H * d)
        return self.wo(y)
