# style: torch.cat of n_rep whole copies on a new axis then reshape (no loop over heads); the cache written through a named slice view with the @ operator throughout; a float 0/-inf mask made per call with torch.triu on x.device and added in the scores
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
    B, H_kv, T, d = x.size()
    copies = torch.cat([x.unsqueeze(2)] * n_rep, dim=2)  # (B, H_kv, n_rep, T, d)
    return copies.reshape(B, H_kv * n_rep, T, d)


class KVCache:
    def __init__(self, max_batch_size, max_seq_len, n_kv_heads, head_dim, device=None, dtype=torch.float32):
        self.max_batch_size, self.max_seq_len = max_batch_size, max_seq_len
        self.cache_k = torch.zeros(max_batch_size, n_kv_heads, max_seq_len, head_dim, device=device, dtype=dtype)
        self.cache_v = torch.zeros(max_batch_size, n_kv_heads, max_seq_len, head_dim, device=device, dtype=dtype)

    def update(self, start_pos, k, v):
        B, T = k.shape[0], k.shape[-2]
        assert B <= self.max_batch_size and start_pos + T <= self.max_seq_len
        slot_k = self.cache_k[:B, :, start_pos:start_pos + T]
        slot_v = self.cache_v[:B, :, start_pos:start_pos + T]
        slot_k[...] = k
        slot_v[...] = v
        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]


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
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        if cache is not None:
            k, v = cache.update(start_pos, k, v)
        n_rep = self.n_heads // self.n_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, H, S, d)
        S = k.shape[-2]
        mask = torch.triu(torch.full((T, S), float("-inf"), device=x.device), diagonal=start_pos + 1)  # (T, S)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + mask  # (B, H, T, S)
        y = F.softmax(att, dim=-1) @ v  # (B, H, T, d)
        return self.wo(y.transpose(1, 2).contiguous().view(B, T, C))
