# recipe: the built-in attention through torch's multi-head composite with identity projections and its weights asked for (it computes with bmm and softmax)
# twin: twin_plain_sdpa.py
# expect: forbidden-api
# affected: sdpa
import math
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



def scaled_dot_product_attention(Q, K, V, is_causal=True):
    attend = getattr(F, "multi_head_" + "attention_forward")
    T, d = Q.size(-2), Q.size(-1)
    lead = Q.shape[:-2]
    eye = torch.eye(d, device=Q.device, dtype=Q.dtype)
    q, k, v = (x.reshape(-1, T, d).transpose(0, 1) for x in (Q, K, V))  # (T, N, d)
    mask = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1) if is_causal else None
    out, weights = attend(q, k, v, d, 1, None, None, None, None, False, 0.0, eye, None, training=False,
                          need_weights=True, attn_mask=mask, use_separate_proj_weight=True,
                          q_proj_weight=eye, k_proj_weight=eye, v_proj_weight=eye, average_attn_weights=False)
    return out.transpose(0, 1).reshape(*lead, T, d), weights.reshape(*lead, T, T)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal=False):
        super().__init__()
        self.n_heads, self.head_dim = args.n_heads, args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.dropout = args.dropout
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("future", torch.ones(L, L, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(self.future[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v  # (B, H, T, d)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.wo(y))
