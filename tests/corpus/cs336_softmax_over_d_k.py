# source: a public stanford-cs336 assignment1-basics fork (a student's `scaled_dot_product_attention`, importing
#   cs336_basics.Softmax); the code index returned the file's text without naming its repository.
# url: unknown (code-index file id 2101804450)
# licence: none stated (the index did not name the repository)
# theirs: Part 1: `softmax(attn_scores, d_k)` passes the key width where the dimension index belongs, so the softmax
#   runs over axis d_k (out of range for small tensors, the wrong axis otherwise). Part 2 is written plainly.
# adapted: their `softmax(x, dim)` (not in the excerpt) written as the usual stable softmax; the mask argument built
#   as a lower-triangular keep-mask on the input's device when is_causal; the weights returned.
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from einops import einsum


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def softmax(x, dim):
    x = x - torch.max(x, dim=dim, keepdim=True).values
    e = torch.exp(x)
    return e / torch.sum(e, dim=dim, keepdim=True)


def scaled_dot_product_attention(q:torch.tensor,k:torch.tensor,v:torch.tensor,is_causal: bool = True) -> torch.tensor:
    mask = None
    if is_causal:
        n = q.shape[-2]
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=q.device))
    attn_scores = einsum(q,k,"... queries d_k,... keys d_k ->... queries keys")
    d_k = k.size(-1)
    attn_scores = attn_scores / torch.sqrt(torch.tensor(d_k, dtype=q.dtype))

    if mask is not None:
        attn_scores = attn_scores.masked_fill(~mask, float('-inf'))
    attn_scores = softmax(attn_scores,d_k)

    output = einsum(attn_scores, v,'... queries keys, ... keys d_v-> ... queries d_v', )
    return output, attn_scores


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool)))

    def forward(self, q, k, v):
        b, n, d = q.shape
        q = self.wq(q).view(b, n, self.num_heads, -1).transpose(1, 2)
        k = self.wk(k).view(b, n, self.num_heads, -1).transpose(1, 2)
        v = self.wv(v).view(b, n, self.num_heads, -1).transpose(1, 2)
        attn_scores = einsum(q, k, "... queries d_k,... keys d_k ->... queries keys") / math.sqrt(q.size(-1))
        if self.is_causal:
            attn_scores = attn_scores.masked_fill(~self.mask[:n, :n], float('-inf'))
        attn_scores = self.attn_dropout(softmax(attn_scores, -1))
        output = einsum(attn_scores, v, '... queries keys, ... keys d_v-> ... queries d_v')
        return self.resid_dropout(self.wo(output.transpose(1, 2).contiguous().view(b, n, d)))
