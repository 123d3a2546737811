# seen in: facebookresearch/fairseq2 (naive_scaled_dot_product_attention and its causal bias): an additive float mask made as log(tril(ones)) on the input's device, bottom-right aligned; softmax(dtype=torch.float32) cast back with type_as; heads by unflatten
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.functional import softmax


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def log_causal_bias(q_len: int, k_len: int, device, dtype) -> Tensor:
    """log of a lower-triangular ones matrix: 0 where a key is visible, -inf where not."""
    bias = torch.ones((q_len, k_len), device=device, dtype=dtype)
    bias.tril_(diagonal=k_len - q_len)
    return bias.log_()


def attend(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, drop=None) -> tuple[Tensor, Tensor]:
    weights = torch.matmul(q, k.transpose(-1, -2)) * (q.size(-1) ** -0.5)
    if bias is not None:
        weights = weights + bias
    weights = softmax(weights, dim=-1, dtype=torch.float32).type_as(q)
    return torch.matmul(weights if drop is None else drop(weights), v), weights


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    return attend(q, k, v, log_causal_bias(q.size(-2), k.size(-2), q.device, q.dtype) if is_causal else None)


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

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        q, k, v = (w(x).unflatten(-1, (self.num_heads, -1)) for w, x in ((self.wq, q), (self.wk, k), (self.wv, v)))
        bias = log_causal_bias(q.size(1), k.size(1), q.device, q.dtype) if self.is_causal else None
        out, _ = attend(q.transpose(-2, -3), k.transpose(-2, -3), v.transpose(-2, -3), bias, self.attn_dropout)
        return self.resid_dropout(self.wo(out.transpose(-2, -3).flatten(-2, -1)))
