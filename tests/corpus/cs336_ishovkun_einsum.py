# source: ishovkun/assignment1-basics, cs336_basics/transformer_lm/attention.py, class Attention (a student's CS336 assignment 1)
# url: https://github.com/ishovkun/assignment1-basics/blob/main/cs336_basics/transformer_lm/attention.py
# licence: none stated (no LICENSE file in the index, none in the file)
# theirs: Part 1: einops einsum over `...` leading dims, scale 1/(K.shape[-1] ** 0.5), masked positions set by
#   boolean index assignment `QK[mask == False] = -inf`. Part 2 is written plainly in the same style.
# adapted: the module's forward became the function; their Softmax(-1) class written as the usual stable softmax;
#   the mask argument built as a lower-triangular keep-mask on the input's device when is_causal; weights returned.
from dataclasses import dataclass

import torch
from einops import einsum, rearrange


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


class Softmax(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        e = torch.exp(x - x.amax(dim=self.dim, keepdim=True))
        return e / e.sum(dim=self.dim, keepdim=True)


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    mask = None
    if is_causal:
        n = Q.shape[-2]
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool, device=Q.device))
    scale = 1/(K.shape[-1] ** 0.5)
    # Attention(Q, K, V ) = softmax (Q⊤K √dk ) V
    QK = scale * einsum(Q, K, "... i k, ... j k -> ... i j")
    if mask is not None:
        QK[..., mask == False] = float("-inf")
    S = Softmax(-1).forward(QK)
    Attn = einsum(S, V, "... i j, ... j k -> ... i k")
    return Attn, S


class MultiHeadAttention(torch.nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.num_heads = args.n_heads
        self.wq = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wk = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wv = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.wo = torch.nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = torch.nn.Dropout(args.dropout)
        self.resid_dropout = torch.nn.Dropout(args.dropout)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool)))

    def forward(self, q, k, v):
        n = q.shape[-2]
        Q = rearrange(self.wq(q), "... n (h k) -> ... h n k", h=self.num_heads)
        K = rearrange(self.wk(k), "... n (h k) -> ... h n k", h=self.num_heads)
        V = rearrange(self.wv(v), "... n (h k) -> ... h n k", h=self.num_heads)
        QK = einsum(Q, K, "... i k, ... j k -> ... i j") / (K.shape[-1] ** 0.5)
        if self.is_causal:
            QK = QK.masked_fill(self.mask[:n, :n] == False, float("-inf"))
        S = self.attn_dropout(Softmax(-1).forward(QK))
        Attn = rearrange(einsum(S, V, "... i j, ... j k -> ... i k"), "... h n k -> ... n (h k)")
        return self.resid_dropout(self.wo(Attn))
