# style: Tensor.repeat on an inserted group axis (B, H_kv, n_rep, T, d); Llama's additive mask, a square -inf triu beside zeros for the cached positions (torch.hstack); torch.bmm on heads flattened into the batch
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
    bs, n_kv_heads, slen, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].repeat(1, 1, n_rep, 1, 1).view(bs, n_kv_heads * n_rep, slen, head_dim)


class KVCache:
    def __init__(self, max_batch_size, max_seq_len, n_kv_heads, head_dim, device=None, dtype=torch.float32):
        self.cache_k = torch.zeros((max_batch_size, n_kv_heads, max_seq_len, head_dim), dtype=dtype, device=device)
        self.cache_v = torch.zeros((max_batch_size, n_kv_heads, max_seq_len, head_dim), dtype=dtype, device=device)

    def update(self, start_pos, xk, xv):
        bsz, seqlen = xk.shape[0], xk.shape[2]
        self.cache_k[:bsz, :, start_pos : start_pos + seqlen] = xk
        self.cache_v[:bsz, :, start_pos : start_pos + seqlen] = xv
        keys = self.cache_k[:bsz, :, : start_pos + seqlen]
        values = self.cache_v[:bsz, :, : start_pos + seqlen]
        return keys, values


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        assert args.n_heads % args.n_kv_heads == 0
        self.n_heads = args.n_heads
        self.n_kv_heads = args.n_kv_heads
        self.n_rep = self.n_heads // self.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)

    def forward(self, x, cache=None, start_pos=0):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, H_kv, T, d)
        if cache is not None:
            xk, xv = cache.update(start_pos, xk, xv)
        keys = repeat_kv(xk, self.n_rep)  # (B, H, S, d)
        values = repeat_kv(xv, self.n_rep)  # (B, H, S, d)
        S = keys.shape[2]
        mask = torch.full((seqlen, seqlen), float("-inf"), device=x.device).triu(1)  # (T, T)
        mask = torch.hstack([torch.zeros((seqlen, start_pos), device=x.device), mask]).type_as(xq)  # (T, S)
        q = xq.reshape(bsz * self.n_heads, seqlen, self.head_dim)  # (B*H, T, d)
        k = keys.reshape(bsz * self.n_heads, S, self.head_dim)  # (B*H, S, d)
        v = values.reshape(bsz * self.n_heads, S, self.head_dim)  # (B*H, S, d)
        scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim) + mask  # (B*H, T, S)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.bmm(scores, v).view(bsz, self.n_heads, seqlen, self.head_dim)  # (B, H, T, d)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)  # (B, T, H*d)
        return self.wo(output)
