# seen in: datawhalechina/happy-llm (docs/chapter2 transformer.py, MultiHeadAttention): an additive (1, 1, L, L) triu(-inf) buffer registered only when causal, asserted with hasattr, softmax upcast to float32 and cast back with type_as
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    # 分数：Q·Kᵀ / √d_k
    n, d_k = Q.size(-2), Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if is_causal:
        scores = scores + torch.full((n, n), float("-inf"), device=Q.device).triu(diagonal=1)
    weights = F.softmax(scores.float(), dim=-1).type_as(Q)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal=False):
        super().__init__()
        assert args.dim % args.n_heads == 0  # 每个头分到同样的宽度
        self.heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        if is_causal:  # 只有因果注意力才需要遮罩
            L = args.max_seq_len
            self.register_buffer("mask", torch.full((1, 1, L, L), float("-inf")).triu(diagonal=1))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        bsz, seqlen, _ = q.shape
        # (B, T, C) -> (B, heads, T, head_dim)
        xq, xk, xv = (x.view(bsz, seqlen, self.heads, self.head_dim).transpose(1, 2)
                      for x in (self.wq(q), self.wk(k), self.wv(v)))
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.is_causal:
            assert hasattr(self, "mask")
            scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(xq))
        out = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(out))
