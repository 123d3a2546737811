# style: indexing with a head map x[:, head_map]; the cache an nn.Module with register_buffer, written by narrow(...).copy_; torch.einsum for scores and output; an additive mask of torch.finfo(dtype).min from the offset S - T
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
    n_kv_heads = x.size(1)
    head_map = torch.arange(n_kv_heads * n_rep, device=x.device) // n_rep  # query head h reads kv head h // n_rep
    return x[:, head_map]  # (B, H, T, d)


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_len, n_kv_heads, head_dim, device=None, dtype=torch.float32):
        super().__init__()
        shape = (max_batch_size, n_kv_heads, max_seq_len, head_dim)
        self.register_buffer("cache_k", torch.zeros(shape, device=device, dtype=dtype))
        self.register_buffer("cache_v", torch.zeros(shape, device=device, dtype=dtype))

    def update(self, start_pos, k, v):
        B, T = k.size(0), k.size(2)
        self.cache_k[:B].narrow(2, start_pos, T).copy_(k)
        self.cache_v[:B].narrow(2, start_pos, T).copy_(v)
        return self.cache_k[:B].narrow(2, 0, start_pos + T), self.cache_v[:B].narrow(2, 0, start_pos + T)


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, cache=None, start_pos=0):
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)  # (B, T, H, d)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)
        k = repeat_kv(k, self.n_heads // self.n_kv_heads)  # (B, H, S, d)
        v = repeat_kv(v, self.n_heads // self.n_kv_heads)  # (B, H, S, d)
        S = k.size(2)
        scores = torch.einsum("bthd,bhsd->bhts", q, k) / math.sqrt(self.head_dim)  # (B, H, T, S)
        # the T new queries are the last T of the S positions seen so far
        hidden = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(diagonal=S - T + 1)  # (T, S)
        bias = torch.zeros(T, S, dtype=scores.dtype, device=x.device)
        bias[hidden] = torch.finfo(scores.dtype).min
        weights = torch.softmax(scores + bias, dim=-1)  # (B, H, T, S)
        y = torch.einsum("bhts,bhsd->bthd", weights, v).reshape(B, T, C)  # (B, T, C)
        return self.wo(y)
