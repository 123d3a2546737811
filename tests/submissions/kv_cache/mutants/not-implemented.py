# expect: not-implemented
# part: repeat
# why: the notebook's three stubs untouched: every graded name raises NotImplementedError
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
    """(B, H_kv, T, d) -> (B, H_kv * n_rep, T, d)"""
    # TODO 1：输出的第 h 个头是输入的第 h // n_rep 个头。
    raise NotImplementedError


class KVCache:
    def __init__(self, max_batch_size, max_seq_len, n_kv_heads, head_dim, device=None, dtype=torch.float32):
        # TODO 2a：预先分配全零的 cache_k 与 cache_v。
        raise NotImplementedError

    def update(self, start_pos, k, v):
        # TODO 2b：写入 [start_pos, start_pos + T)，返回到目前为止的键和值。
        raise NotImplementedError


class GroupedQueryAttention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        # TODO 3a：wq, wk, wv, wo。
        raise NotImplementedError

    def forward(self, x, cache=None, start_pos=0):
        # TODO 3b：投影、拆头、写缓存、repeat_kv、带偏移的因果掩码、合并多头、wo。
        raise NotImplementedError
