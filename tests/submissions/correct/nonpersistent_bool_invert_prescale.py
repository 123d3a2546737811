# style: register_buffer(..., persistent=False), bool tril buffer inverted with ~, q = q / math.sqrt(d) before the matmul
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 2
    dropout: float = 0.0
    max_seq_len: int = 64


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    # 先把 Q 缩放，再做矩阵乘法（数学上等价）
    Q = Q / math.sqrt(Q.shape[-1])
    scores = Q @ K.transpose(-2, -1)
    if is_causal:
        T = Q.shape[-2]
        see = torch.tril(torch.ones(T, T, device=Q.device)).bool()   # 下三角 = 可以看到
        scores = scores.masked_fill(~see, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights @ V, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
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
        # 不需要存进 state_dict，所以 persistent=False；但它仍然会跟着 .to(device) 走
        causal = torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)).bool()
        self.register_buffer("causal_mask", causal.view(1, 1, args.max_seq_len, args.max_seq_len), persistent=False)

    def forward(self, q, k, v):
        B, T, C = q.shape
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)

        q = q / math.sqrt(self.head_dim)
        att = q @ k.transpose(-2, -1)
        if self.is_causal:
            att = att.masked_fill(~self.causal_mask[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        out = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        out = self.wo(out)
        out = self.resid_dropout(out)
        return out
