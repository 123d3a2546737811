# expect: repeat-kv-order
# part: repeat
# twin: ../correct/expand_reshape_dataclass_index_copy.py
# why: expand on a new axis before the kv heads: head h reads kv head h % H_kv
# computes: tile=True
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
    B, H_kv, T, d = x.shape
    return x[:, None, :, :, :].expand(B, n_rep, H_kv, T, d).reshape(B, H_kv * n_rep, T, d)  # (B, H, T, d)


@dataclass
class KVCache:
    max_batch_size: int
    max_seq_len: int
    n_kv_heads: int
    head_dim: int
    device: torch.device | str | None = None
    dtype: torch.dtype = torch.float32

    def __post_init__(self):
        shape = (self.max_batch_size, self.n_kv_heads, self.max_seq_len, self.head_dim)
        self.cache_k = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.cache_v = torch.zeros(shape, device=self.device, dtype=self.dtype)

    def update(self, start_pos: int, k: torch.Tensor, v: torch.Tensor):
        B, T = k.size(0), k.size(2)
        positions = torch.arange(start_pos, start_pos + T, device=k.device)
        self.cache_k[:B].index_copy_(2, positions, k)
        self.cache_v[:B].index_copy_(2, positions, v)
        end = start_pos + T
        return self.cache_k[:B, :, :end], self.cache_v[:B, :, :end]


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0, "n_heads must be a multiple of n_kv_heads"
        self.n_heads, self.n_kv_heads = args.n_heads, args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, self.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(self.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None, start_pos: int = 0) -> torch.Tensor:
        B, T, _ = x.shape
        q = self.wq(x).reshape(B, T, self.n_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H, T, d)
        k = self.wk(x).reshape(B, T, self.n_kv_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H_kv, T, d)
        v = self.wv(x).reshape(B, T, self.n_kv_heads, self.head_dim).permute(0, 2, 1, 3)  # (B, H_kv, T, d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)
        n_rep = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, H, S, d)
        S = k.shape[-2]
        query_pos = torch.arange(start_pos, start_pos + T, device=x.device).unsqueeze(1)  # (T, 1)
        key_pos = torch.arange(S, device=x.device).unsqueeze(0)  # (1, S)
        bias = torch.zeros(T, S, device=x.device, dtype=x.dtype)
        bias = bias.masked_fill(key_pos > query_pos, float("-inf"))  # (T, S)
        att = (q @ k.transpose(-2, -1)) / self.head_dim ** 0.5 + bias  # (B, H, T, S)
        y = att.softmax(dim=-1) @ v  # (B, H, T, d)
        return self.wo(y.permute(0, 2, 1, 3).reshape(B, T, -1))  # (B, T, C)
