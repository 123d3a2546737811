# seen in: OpenNMT/OpenNMT-py (MultiHeadedAttention): the query divided by sqrt(dim_per_head) before matmul with key.transpose(2, 3) (4-D only), a (1, T, T) uint8 future mask made bool and unsqueezed to (1, 1, T, T), filled with -1e18 after .float()
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def future_of(n, device):
    """(1, n, n) bool, True above the diagonal."""
    return torch.ones([n, n], device=device, dtype=torch.uint8).triu_(1).view(1, n, n).bool()


def attend(query, key, value, future, softmax, dropout=None):
    scores = torch.matmul(query / math.sqrt(query.size(-1)), key.transpose(2, 3)).float()  # axes 2, 3: 4-D only
    if future is not None:
        scores = scores.masked_fill(future.unsqueeze(1), -1e18)  # (1, 1, T, T)
    probs = softmax(scores).to(query.dtype)
    return torch.matmul(probs if dropout is None else dropout(probs), value), probs


def scaled_dot_product_attention(query, key, value, is_causal: bool = True):
    future = future_of(query.size(-2), query.device) if is_causal else None
    return attend(query, key, value, future, nn.Softmax(dim=-1))


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()
        assert args.dim % args.n_heads == 0
        self.head_count = args.n_heads
        self.dim_per_head = args.dim // args.n_heads
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.softmax = nn.Softmax(dim=-1)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

    def forward(self, q, k, v):
        batch = k.size(0)

        def shape(x):
            return x.view(batch, -1, self.head_count, self.dim_per_head).transpose(1, 2)

        def unshape(x):
            return x.transpose(1, 2).contiguous().view(batch, -1, self.head_count * self.dim_per_head)

        future = future_of(q.size(1), q.device) if self.is_causal else None
        context, _ = attend(shape(self.wq(q)), shape(self.wk(k)), shape(self.wv(v)), future, self.softmax,
                            self.attn_dropout)
        return self.resid_dropout(self.wo(unshape(context)))
