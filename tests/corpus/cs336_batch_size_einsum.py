# seen in: forks of stanford-cs336/assignment1-basics (the code index named no repository; ten stored forks share the pattern): einops einsum patterns that start with a named `batch_size` axis, and a value axis named `seq_len_v` where the weights say `seq_len_k`
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from einops import einsum, rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def softmax(x, dim):
    ex = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return ex / ex.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    logits = einsum(Q, K, "batch_size ... seq_len_q d_k, batch_size ... seq_len_k d_k "
                          "-> batch_size ... seq_len_q seq_len_k") / np.sqrt(Q.shape[-1])
    if is_causal:
        n = Q.shape[-2]
        logits = logits.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=Q.device).tril(), float("-inf"))
    probs = softmax(logits, dim=-1)
    # the key axis is called seq_len_k in `probs` but seq_len_v in V: einops sums each on its own
    out = einsum(probs, V, "batch_size ... seq_len_q seq_len_k, batch_size ... seq_len_v d_v "
                           "-> batch_size ... seq_len_q d_v")
    return out, probs


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.h = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("keep", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril())

    def forward(self, q, k, v):
        n = q.shape[-2]
        to_heads = "batch_size seq_len (h d) -> batch_size h seq_len d"
        Qh = rearrange(self.wq(q), to_heads, h=self.h)
        Kh = rearrange(self.wk(k), to_heads, h=self.h)
        Vh = rearrange(self.wv(v), to_heads, h=self.h)
        logits = einsum(Qh, Kh, "batch_size ... seq_len_q d, batch_size ... seq_len_k d "
                                "-> batch_size ... seq_len_q seq_len_k") / np.sqrt(Qh.shape[-1])
        if self.is_causal:
            logits = logits.masked_fill(~self.keep[:n, :n], float("-inf"))
        probs = self.attn_dropout(softmax(logits, dim=-1))
        out = einsum(probs, Vh, "batch_size ... seq_len_q seq_len_k, batch_size ... seq_len_k d "
                                "-> batch_size ... seq_len_q d")
        return self.resid_dropout(self.wo(rearrange(out, "batch_size h seq_len d -> batch_size seq_len (h d)")))
