# style: unsqueeze + expand(-1, -1, n_rep, -1, -1) + flatten; torch.where(allowed, scores, finfo.min) with the allowed keys from arange comparisons; scores from the query pre-scaled by head_dim ** -0.5; F.linear on the layers' weights
# 已提供 / Provided：后面的代码都依赖这些导入。
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


# 已提供 / Provided：分组查询注意力的超参数。
@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    n_kv_heads: int = 2
    max_seq_len: int = 256
    max_batch_size: int = 4


# 已提供 / Provided：实验 1 的因果注意力（方阵掩码，除以 √d_k）。
def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T, d_k = Q.size(-2), Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)  # (..., T, T)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1)  # (T, T)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, dim=-1)  # (..., T, T)
    out = torch.matmul(weights, V)  # (..., T, d_v)
    return out, weights


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    return x.unsqueeze(2).expand(-1, -1, n_rep, -1, -1).flatten(1, 2)  # (B, H_kv * n_rep, T, d)


class KVCache:
    def __init__(self, max_batch_size: int, max_seq_len: int, n_kv_heads: int, head_dim: int,
                 device=None, dtype=torch.float32):
        size = (max_batch_size, n_kv_heads, max_seq_len, head_dim)
        self.cache_k = torch.zeros(size, dtype=dtype, device=device)
        self.cache_v = torch.zeros_like(self.cache_k)

    def update(self, start_pos: int, k: torch.Tensor, v: torch.Tensor):
        B, T = k.shape[0], k.shape[2]
        stop = start_pos + T
        self.cache_k[:B, :, start_pos:stop] = k
        self.cache_v[:B, :, start_pos:stop] = v
        return self.cache_k[:B, :, :stop], self.cache_v[:B, :, :stop]


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0
        self.n_heads, self.n_kv_heads = args.n_heads, args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.scale = self.head_dim ** -0.5
        self.wq = nn.Linear(args.dim, self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_dim, args.dim, bias=False)

    def split(self, t: torch.Tensor, heads: int) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, heads, self.head_dim).transpose(1, 2)  # (B, heads, T, d)

    def forward(self, x, cache=None, start_pos=0):
        B, T, C = x.shape
        q = self.split(F.linear(x, self.wq.weight), self.n_heads) * self.scale  # (B, H, T, d)
        k = self.split(F.linear(x, self.wk.weight), self.n_kv_heads)  # (B, H_kv, T, d)
        v = self.split(F.linear(x, self.wv.weight), self.n_kv_heads)  # (B, H_kv, T, d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)
        rep = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, rep), repeat_kv(v, rep)  # (B, H, S, d)
        S = k.shape[2]
        allowed = torch.arange(S, device=x.device)[None, :] <= torch.arange(T, device=x.device)[:, None] + start_pos
        scores = q @ k.mT  # (B, H, T, S)
        scores = torch.where(allowed, scores, torch.finfo(scores.dtype).min)
        y = torch.softmax(scores, dim=-1) @ v  # (B, H, T, d)
        return F.linear(y.transpose(1, 2).reshape(B, T, C), self.wo.weight)  # (B, T, C)
