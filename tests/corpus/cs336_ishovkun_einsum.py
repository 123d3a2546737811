# seen in: ishovkun/assignment1-basics (a CS336 assignment 1): einops `einsum` over `...` dims, the scale 1/(d_k ** 0.5) in front, masked entries set by boolean index assignment `scores[..., keep == False] = -inf`, a Softmax module called through .forward
from dataclasses import dataclass

import torch
from einops import einsum, rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


class RowSoftmax(torch.nn.Module):
    def __init__(self, axis):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        ex = (x - x.amax(dim=self.axis, keepdim=True)).exp()
        return ex / ex.sum(dim=self.axis, keepdim=True)


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    factor = 1 / (K.shape[-1] ** 0.5)
    scores = factor * einsum(Q, K, "... q d, ... s d -> ... q s")
    if is_causal:
        n = Q.shape[-2]
        keep = torch.ones(n, n, dtype=torch.bool, device=Q.device).tril()
        scores[..., keep == False] = float("-inf")  # noqa: E712 (the idiom as written)
    probs = RowSoftmax(-1).forward(scores)
    return einsum(probs, V, "... q s, ... s d -> ... q d"), probs


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.h = args.n_heads
        self.wq = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wk = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wv = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wo = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = torch.nn.Dropout(args.dropout)
        self.resid_dropout = torch.nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("keep", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).tril())

    def forward(self, q, k, v):
        n = q.shape[-2]
        split = lambda x: rearrange(x, "... n (h d) -> ... h n d", h=self.h)  # noqa: E731
        Qh, Kh, Vh = split(self.wq(q)), split(self.wk(k)), split(self.wv(v))
        scores = einsum(Qh, Kh, "... q d, ... s d -> ... q s") / (Kh.shape[-1] ** 0.5)
        if self.is_causal:
            scores = scores.masked_fill(self.keep[:n, :n] == False, float("-inf"))  # noqa: E712
        probs = self.attn_dropout(RowSoftmax(-1).forward(scores))
        heads = einsum(probs, Vh, "... q s, ... s d -> ... q d")
        return self.resid_dropout(self.wo(rearrange(heads, "... h n d -> ... n (h d)")))
