# seen in: jadore801120/attention-is-all-you-need-pytorch (transformer/SubLayers.py, MultiHeadAttention, later versions): the residual added back to the output projection and nn.LayerNorm(d_model, eps=1e-6) applied inside the attention module; Part 1 is that file's ScaledDotProductAttention with a temperature, made rank-free
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    temperature = Q.size(-1) ** 0.5
    attn = torch.matmul(Q / temperature, K.transpose(-2, -1))
    if is_causal:
        n = Q.size(-2)
        keep = torch.tril(torch.ones(n, n, device=Q.device)).bool()
        attn = attn.masked_fill(keep == 0, float("-inf"))
    attn = F.softmax(attn, dim=-1)
    return torch.matmul(attn, V), attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_head, self.d_k = args.n_heads, args.dim // args.n_heads
        self.is_causal = is_causal
        self.wq = nn.Linear(args.dim, self.n_head * self.d_k, bias=False)
        self.wk = nn.Linear(args.dim, self.n_head * self.d_k, bias=False)
        self.wv = nn.Linear(args.dim, self.n_head * self.d_k, bias=False)
        self.wo = nn.Linear(self.n_head * self.d_k, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.layer_norm = nn.LayerNorm(args.dim, eps=1e-6)

    def forward(self, q, k, v):
        d_k, n_head = self.d_k, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)
        residual = q
        q = self.wq(q).view(sz_b, len_q, n_head, d_k).transpose(1, 2)  # (b, h, lq, d_k)
        k = self.wk(k).view(sz_b, len_k, n_head, d_k).transpose(1, 2)
        v = self.wv(v).view(sz_b, len_v, n_head, d_k).transpose(1, 2)
        attn = torch.matmul(q / d_k ** 0.5, k.transpose(2, 3))
        if self.is_causal:
            keep = torch.tril(torch.ones(len_q, len_k, device=q.device)).bool()
            attn = attn.masked_fill(keep == 0, float("-inf"))
        attn = self.attn_dropout(F.softmax(attn, dim=-1))
        q = torch.matmul(attn, v).transpose(1, 2).contiguous().view(sz_b, len_q, -1)
        q = self.resid_dropout(self.wo(q))
        q += residual
        return self.layer_norm(q)
