# style: nanoGPT variant: torch.where(bias.bool(), att, float('-inf')) with a python scalar, F.softmax(att, dim=3) on the 4-D scores, transpose(-1, -2)
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 48
    n_heads: int = 3
    dropout: float = 0.0
    max_seq_len: int = 100


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    att = torch.matmul(Q, K.transpose(-1, -2)) / math.sqrt(Q.size(-1))
    if is_causal:
        T = att.size(-1)
        tril = torch.tril(torch.ones(T, T, device=att.device, dtype=torch.bool))
        att = torch.where(tril, att, float('-inf'))
    att = F.softmax(att, dim=-1)
    return torch.matmul(att, V), att


class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0
        # key, query, value projections for all heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        # output projection
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        # regularization
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_head = args.n_heads
        self.n_embd = args.dim
        self.is_causal = is_causal
        self.register_buffer("bias", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len))
                             .view(1, 1, args.max_seq_len, args.max_seq_len))

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(k.size(-1)))
        if self.is_causal:
            att = torch.where(self.bias[:, :, :T, :T].bool(), att, float('-inf'))
        att = F.softmax(att, dim=3)
        att = self.attn_dropout(att)
        y = torch.matmul(att, v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.wo(y))
        return y
