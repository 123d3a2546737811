# style: a small helper nn.Module for the core (nn.Softmax, torch.where with a float -inf tensor), typing hints
import math
from dataclasses import dataclass
from typing import Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 8
    dropout: float = 0.1
    max_seq_len: int = 128


class Core(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q: Tensor, k: Tensor, v: Tensor, mask: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device))
        weights = self.softmax(scores)
        return torch.matmul(weights, v), weights


_core = Core()


def scaled_dot_product_attention(Q: Tensor, K: Tensor, V: Tensor, is_causal: bool = True) -> Tuple[Tensor, Tensor]:
    T = Q.size(-2)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=Q.device)) if is_causal else None
    return _core(Q, K, V, mask)


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False) -> None:
        super().__init__()
        self.n_heads, self.d = args.n_heads, args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.core = Core()
        self.register_buffer("keep", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool)))

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        B, T, C = q.shape
        q, k, v = (w(x).view(B, T, self.n_heads, self.d).transpose(1, 2) for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)  # (B, H, T, T)
        if self.is_causal:
            scores = scores.masked_fill(~self.keep[:T, :T], float("-inf"))
        y = torch.matmul(self.attn_dropout(self.core.softmax(scores)), v)  # (B, H, T, d)
        return self.resid_dropout(self.wo(y.transpose(1, 2).reshape(B, T, C)))
