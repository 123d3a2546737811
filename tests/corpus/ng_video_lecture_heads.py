# source: karpathy/ng-video-lecture, gpt.py, classes Head and MultiHeadAttention ("Let's build GPT" lecture code); stored commit 0ceb0055aad7a7b255730be650dd667d6daffd9f
# url: https://github.com/karpathy/ng-video-lecture/blob/master/gpt.py
# licence: none stated (no LICENSE file in the index, none in the file)
# theirs: Part 2: one Head module per head, run in a Python list comprehension and concatenated, each head scaling
#   by `C**-0.5` where C is the embedding width (n_embd), not the head size. Part 1 is written plainly.
# adapted: the file-level globals n_embd/block_size/dropout -> args fields; each Head owned its own
#   n_embd -> head_size key/query/value layers, here the heads share wq/wk/wv (bias=False) and each attends over its
#   slice, so the reference weights load; proj -> wo (bias=False; theirs has a bias); dropouts renamed;
#   forward(x) -> (q, k, v); the tril mask applied only when causal.
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    T, C = q.shape[-2:]
    wei = q @ k.transpose(-2, -1) * C**-0.5
    if is_causal:
        tril = torch.tril(torch.ones(T, T, device=q.device))
        wei = wei.masked_fill(tril == 0, float('-inf'))
    wei = F.softmax(wei, dim=-1)
    return wei @ v, wei


class Head(nn.Module):
    """ one head of self-attention """

    def __init__(self, block_size, dropout, is_causal):
        super().__init__()
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
        self.dropout = dropout
        self.is_causal = is_causal

    def forward(self, x, q, k, v):
        B,T,C = x.shape
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2,-1) * C**-0.5 # (B, T, C) @ (B, C, T) -> (B, T, T)
        if self.is_causal:
            wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1) # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        out = wei @ v # (B, T, T) @ (B, T, C) -> (B, T, C)
        return out


class MultiHeadAttention(nn.Module):
    """ multiple heads of self-attention in parallel """

    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.head_size = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.heads = nn.ModuleList([Head(args.max_seq_len, self.attn_dropout, is_causal) for _ in range(args.n_heads)])
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):
        x = q
        q, k, v = self.wq(q), self.wk(k), self.wv(v)
        s = self.head_size
        out = torch.cat([h(x, q[..., i*s:(i+1)*s], k[..., i*s:(i+1)*s], v[..., i*s:(i+1)*s])
                         for i, h in enumerate(self.heads)], dim=-1)
        out = self.resid_dropout(self.wo(out))
        return out
