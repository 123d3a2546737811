# source: a public stanford-cs336 assignment1-basics fork (a student's `scaled_dot_product_attention`, importing
#   cs336_basics.model.softmax); the code index returned the file's text without naming its repository. The same
#   `batch_size ... seq_len_q d_k` pattern appears in at least ten stored CS336 repositories.
# url: unknown (code-index search excerpt)
# licence: none stated (the index did not name the repository)
# theirs: Part 1: einops patterns `batch_size ... seq_len_q d_k`, which demand at least one named leading dim, so a
#   (T, d) input without batch dims raises; and the second einsum names the key axis `seq_len_k` in the weights but
#   `seq_len_v` in V, so einops sums the two axes separately instead of contracting them (wrong values for every
#   shape). Part 2 is written plainly in the same style (with the key axis named alike).
# adapted: their softmax (not in the excerpt) written as the usual stable one; the mask argument built as a
#   lower-triangular keep-mask on the input's device when is_causal; the weights returned.
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from einops import rearrange, einsum


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def softmax(x, dim):
    e = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return e / e.sum(dim=dim, keepdim=True)


def scaled_dot_product_attention(Q,K,V, is_causal: bool = True):
    mask = None
    if is_causal:
        n = Q.shape[-2]
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=Q.device))
    QtK = einsum(Q,K, 'batch_size ... seq_len_q d_k, batch_size ... seq_len_k d_k -> batch_size ... seq_len_q seq_len_k') / np.sqrt(Q.shape[-1])
    if mask is not None:
        QtK = QtK.masked_fill(~mask, float('-inf'))
    scores = softmax(QtK, dim=-1)
    return einsum(scores, V, 'batch_size ... seq_len_q seq_len_k, batch_size ... seq_len_v d_v -> batch_size ... seq_len_q d_v'), scores


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
        n = q.shape[-2]
        Q = rearrange(self.wq(q), 'batch_size seq_len (h d_k) -> batch_size h seq_len d_k', h=self.num_heads)
        K = rearrange(self.wk(k), 'batch_size seq_len (h d_k) -> batch_size h seq_len d_k', h=self.num_heads)
        V = rearrange(self.wv(v), 'batch_size seq_len (h d_v) -> batch_size h seq_len d_v', h=self.num_heads)
        QtK = einsum(Q, K, 'batch_size ... seq_len_q d_k, batch_size ... seq_len_k d_k -> batch_size ... seq_len_q seq_len_k') / np.sqrt(Q.shape[-1])
        if self.is_causal:
            QtK = QtK.masked_fill(~self.mask[:n, :n], float('-inf'))
        scores = self.attn_dropout(softmax(QtK, dim=-1))
        out = einsum(scores, V, 'batch_size ... seq_len_q seq_len_k, batch_size ... seq_len_k d_v -> batch_size ... seq_len_q d_v')
        return self.resid_dropout(self.wo(rearrange(out, 'batch_size h seq_len d_v -> batch_size seq_len (h d_v)')))
