# expect: unsupported-op
# part: sdpa
# Part 1's hand-written softmax lists the masked positions in its backward with torch.nonzero, a size set by the
# values, which the graph runner cannot bound before running it; the forward and the values are right. Only the checks
# that run the backward meet the operator; Part 2 uses F.softmax.
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


class StableSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        y = e / e.sum(dim=-1, keepdim=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        dx = y * (grad - (grad * y).sum(dim=-1, keepdim=True))
        dx[torch.nonzero(y == 0, as_tuple=True)] = 0.0  # the masked positions as an index list: no gradient there
        return dx


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        scores = scores.masked_fill(torch.triu(torch.ones(T, T, device=Q.device), 1).bool(), float("-inf"))
    weights = StableSoftmax.apply(scores)
    return weights @ V, weights


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
        self.is_causal = is_causal
        self.register_buffer("mask", torch.ones(args.max_seq_len, args.max_seq_len).triu(1).bool())

    def forward(self, q, k, v):
        B, T, _ = q.shape
        heads = lambda x: x.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # noqa: E731  (B, H, T, d)
        q, k, v = heads(self.wq(q)), heads(self.wk(k)), heads(self.wv(v))
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if self.is_causal:
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        return self.resid_dropout(self.wo(y))
