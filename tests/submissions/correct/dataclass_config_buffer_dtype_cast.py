# style: scores computed in float32 whatever the input dtype and cast back; the mask buffer a float -inf bias added in
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scale = 1.0 / math.sqrt(Q.size(-1))
    scores = torch.matmul(Q.float(), K.float().transpose(-2, -1)) * scale
    if is_causal:
        T = Q.size(-2)
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1).type_as(Q)
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        bias = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf")).triu(1)
        self.register_buffer("bias", bias, persistent=False)

    def forward(self, q, k, v):
        bsz, seqlen, _ = q.shape
        xq = self.wq(q).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(k).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(v).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        scores = torch.matmul(xq.float(), xk.float().transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.is_causal:
            scores = scores + self.bias[:, :, :seqlen, :seqlen]
        scores = self.attn_dropout(F.softmax(scores, dim=-1).type_as(xq))
        out = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.resid_dropout(self.wo(out))
