# style: a @dataclass cache with field(init=False) tensors made in __post_init__ and a slice written with Tensor.copy_; an additive mask torch.full((T, S), -inf).triu(start_pos + 1) in the scores' dtype on x.device; softmax upcast to float32 (dtype=)
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
from dataclasses import field


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """每个 kv 头重复 n_rep 次，相邻的 n_rep 个查询头共用一个 kv 头。"""
    return torch.repeat_interleave(x, repeats=n_rep, dim=1)


@dataclass
class KVCache:
    max_batch_size: int
    max_seq_len: int
    n_kv_heads: int
    head_dim: int
    device: object = None
    dtype: torch.dtype = torch.float32
    cache_k: torch.Tensor = field(init=False, repr=False)
    cache_v: torch.Tensor = field(init=False, repr=False)

    def __post_init__(self):
        self.cache_k = torch.zeros(self.max_batch_size, self.n_kv_heads, self.max_seq_len, self.head_dim,
                                   device=self.device, dtype=self.dtype)
        self.cache_v = torch.zeros_like(self.cache_k)

    def update(self, start_pos, k, v):
        B, T = k.shape[0], k.shape[2]
        torch.Tensor.copy_(self.cache_k[:B, :, start_pos:start_pos + T], k)
        torch.Tensor.copy_(self.cache_v[:B, :, start_pos:start_pos + T], v)
        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0, "n_heads 必须是 n_kv_heads 的整数倍"
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.n_rep = args.n_heads // args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x: torch.Tensor, cache: "KVCache | None" = None, start_pos: int = 0) -> torch.Tensor:
        B, T, C = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)  # 缓存里到目前为止的所有位置
        k = repeat_kv(k, self.n_rep)  # (B, H, S, d)
        v = repeat_kv(v, self.n_rep)  # (B, H, S, d)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)  # (B, H, T, S)
        S = k.shape[2]
        mask = torch.full((T, S), float("-inf"), dtype=scores.dtype, device=x.device).triu(start_pos + 1)
        weights = F.softmax(scores + mask, dim=-1, dtype=torch.float32).to(q.dtype)  # (B, H, T, S)
        out = torch.matmul(weights, v)  # (B, H, T, d)
        out = out.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)  # (B, T, H*d)
        return self.wo(out)
