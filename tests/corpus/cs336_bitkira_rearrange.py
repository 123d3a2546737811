# seen in: bitkira/Stanford-CS336 (a CS336 assignment 1): K transposed by einops `rearrange` over `...`, scaled by torch.sqrt of a tensor made from d_k, masked in place with masked_fill_(~keep), a hand-written softmax
from dataclasses import dataclass

import torch
import torch.nn as nn
from einops import rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def stable_softmax(scores, axis):
    shifted = scores - scores.max(dim=axis, keepdim=True).values
    numerator = shifted.exp()
    return numerator / numerator.sum(dim=axis, keepdim=True)


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    key_t = rearrange(key, "... n d -> ... d n")
    logits = query @ key_t / torch.sqrt(torch.tensor(query.shape[-1], dtype=query.dtype))
    if is_causal:
        n = query.shape[-2]
        keep = torch.ones(n, n, dtype=torch.bool, device=query.device).tril()
        logits.masked_fill_(~keep, float("-inf"))
    probs = stable_softmax(logits, axis=-1)
    return probs @ value, probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.heads = args.n_heads
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(args.dim, args.dim, bias=False) for _ in range(4))
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        full = torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool)
        self.register_buffer("keep", full.tril())

    def forward(self, q, k, v):
        n = q.shape[-2]
        qh = rearrange(self.wq(q), "b n (h d) -> b h n d", h=self.heads)
        kh_t = rearrange(self.wk(k), "b n (h d) -> b h d n", h=self.heads)
        vh = rearrange(self.wv(v), "b n (h d) -> b h n d", h=self.heads)
        logits = qh @ kh_t / torch.sqrt(torch.tensor(qh.shape[-1], dtype=qh.dtype))
        if self.is_causal:
            logits = logits.masked_fill(~self.keep[:n, :n], float("-inf"))
        probs = self.attn_dropout(stable_softmax(logits, axis=-1))
        merged = rearrange(probs @ vh, "b h n d -> b n (h d)")
        return self.resid_dropout(self.wo(merged))
