# seen in: karpathy/llama2.c (model.py, Attention, the manual non-flash branch): matmul with xk.transpose(2, 3) (4-D only), an additive (1, 1, T, T) mask of -inf from torch.full + triu(diagonal=1), softmax in float32 cast back with type_as
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


def scaled_dot_product_attention(xq, xk, xv, is_causal: bool = True):
    seqlen, head_dim = xq.shape[-2], xq.shape[-1]
    scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(head_dim)  # axes 2 and 3: (bs, heads, seq, d) only
    if is_causal:
        scores = scores + torch.full((1, 1, seqlen, seqlen), float("-inf"), device=xq.device).triu(diagonal=1)
    scores = F.softmax(scores.float(), dim=-1).type_as(xq)
    return torch.matmul(scores, xv), scores


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        inner = args.n_heads * self.head_dim
        self.wq = nn.Linear(args.dim, inner, bias=False)
        self.wk = nn.Linear(args.dim, inner, bias=False)
        self.wv = nn.Linear(args.dim, inner, bias=False)
        self.wo = nn.Linear(inner, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("mask", torch.full((1, 1, L, L), float("-inf")).triu(diagonal=1))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        bsz, seqlen, _ = q.shape
        xq, xk, xv = (t.view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
                      for t in (self.wq(q), self.wk(k), self.wv(v)))  # (bs, heads, seq, head_dim)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(xq))
        out = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(out))
