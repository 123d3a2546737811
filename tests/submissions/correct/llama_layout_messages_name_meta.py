# style: LLaMA-like module whose assert and error messages, a logged note and a layout constant name "Meta" (text only, never device text)
import logging
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

logger = logging.getLogger(__name__)
HEAD_LAYOUT = "heads split after the projections, as in Meta's LLaMA"


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    if Q.size(-1) != K.size(-1):
        raise ValueError(f"Q and K need one head size (Meta's reference code asserts it too), got {Q.size(-1)} and {K.size(-1)}")
    T = Q.size(-2)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.size(-1))  # (..., T, T)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1)  # (T, T)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores.float(), dim=-1).type_as(Q)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "dim must be divisible by n_heads (Meta's LLaMA layout)"
        logger.debug("attention: %s", HEAD_LAYOUT)
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1), persistent=False)

    def forward(self, q, k, v):
        bsz, seqlen, _ = q.shape
        xq = self.wq(q).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        xk = self.wk(k).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(v).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.is_causal:
            scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = self.attn_dropout(F.softmax(scores.float(), dim=-1).type_as(xq))
        output = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)  # (B, T, dim)
        return self.resid_dropout(self.wo(output))
