# style: copied from the PyTorch docs' reference SDPA: zeros attn_bias filled in place with -inf via logical_not(), `attn_weight += attn_bias`; MHA with a mask per call on q.device
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


def scaled_dot_product_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                                 is_causal: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    L, S = Q.size(-2), K.size(-2)
    scale_factor = 1 / math.sqrt(Q.size(-1))
    attn_bias = torch.zeros(L, S, dtype=Q.dtype, device=Q.device)
    if is_causal:
        temp_mask = torch.ones(L, S, dtype=torch.bool, device=Q.device).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    attn_weight = Q @ K.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    return attn_weight @ V, attn_weight


class MultiHeadAttention(nn.Module):
    """Multi-head attention built on the same recipe as the function above."""

    def __init__(self, args: ModelArgs, is_causal: bool = False) -> None:
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

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B, L, E = q.shape
        q = self.wq(q).view(B, L, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(k).view(B, L, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, L, self.n_heads, self.head_dim).transpose(1, 2)
        attn_bias = torch.zeros(L, L, dtype=q.dtype, device=q.device)
        if self.is_causal:
            keep = torch.ones(L, L, dtype=torch.bool, device=q.device).tril(diagonal=0)
            attn_bias.masked_fill_(keep.logical_not(), float("-inf"))
        attn_weight = q @ k.transpose(-2, -1) * (1 / math.sqrt(self.head_dim))
        attn_weight += attn_bias
        attn_weight = self.attn_dropout(torch.softmax(attn_weight, dim=-1))
        out = (attn_weight @ v).transpose(1, 2).reshape(B, L, E)
        return self.resid_dropout(self.wo(out))
