# source: facebookresearch/fairseq2, src/fairseq2/models/transformer/sdpa/naive.py, function
#   naive_scaled_dot_product_attention and class NaiveSDPA (stored commit cc7b810833540885438aa9a37e66923441041799),
#   with CausalAttentionBias and _create_causal_bias_tensor of src/fairseq2/models/transformer/attention_bias.py
#   (stored commit f97c3582d7d42af73799f953ffb2c1ff182a4677)
# url: https://github.com/facebookresearch/fairseq2/blob/main/src/fairseq2/models/transformer/sdpa/naive.py
# licence: BSD-style (read in both files' own header: "licensed under the BSD-style license found in the LICENSE file
#   in the root directory of this source tree"; that LICENSE file is not in the stored snapshot)
# theirs: Part 1: `torch.matmul(q, k.transpose(-1, -2))` then `* (q.size(-1) ** -0.5)`, any number of leading dims; the
#   causal mask is an additive float bias made as `torch.ones((q_len, k_len), device=..., dtype=...)`, `tril_`, then
#   `log_()` (log 1 = 0, log 0 = -inf); softmax with dtype=torch.float32, then `type_as(q)`. Part 2 is written plainly
#   around it in NaiveSDPA's (N, S, H, K) layout: fairseq2's StandardMultiheadAttention is a larger module (projection
#   factories, position encoders, KV state bags) than this exercise's.
# adapted: Part 1 creates the bias itself (CausalAttentionBias.create_bias_tensor without a window, only when
#   is_causal; theirs passes it in through an AttentionBias cache and skips it when the query has one token) and always
#   returns the weights (needs_weights=True); dropout_p left at its default 0.0. Part 2: wq/wk/wv/wo (bias=False);
#   their `dropout(weights, dropout_p)` (only while training) -> self.attn_dropout; resid_dropout on the output;
#   `from __future__ import annotations` dropped (a dataclass in a file loaded outside sys.modules trips on it).
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.functional import dropout, softmax


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def _create_causal_bias_tensor(
    q_len: int,
    k_len: int,
    attn_window_len: int,
    from_bottom_right: bool,
    device,
    dtype,
) -> Tensor:
    # (S, S_kv)
    bias = torch.ones((q_len, k_len), device=device, dtype=dtype)

    if from_bottom_right:
        d = k_len - q_len
    else:
        d = 0

    bias.tril_(diagonal=d)

    if attn_window_len < q_len:
        bias.triu_(diagonal=d - attn_window_len + 1)

    bias.log_()

    return bias


def causal_bias(q_len: int, k_len: int, device, dtype) -> Tensor:
    attn_window_len = q_len

    # (S, S_kv)
    return _create_causal_bias_tensor(
        q_len,
        k_len,
        attn_window_len,
        from_bottom_right=True,
        device=device,
        dtype=dtype,
    )


def naive_scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    bias: Tensor | None,
    *,
    dropout_p: float = 0.0,
    needs_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    # (N, H, S, K) @ (N, H, K, S_kv) = (N, H, S, S_kv)
    weights = torch.matmul(q, k.transpose(-1, -2))

    weights = weights * (q.size(-1) ** -0.5)

    if bias is not None:
        # (N, H, S, S_kv) + ([[N], H], S, S_kv) -> (N, H, S, S_kv)
        weights = weights + bias

    # For numerical stability run in single precision.
    weights = softmax(weights, dim=-1, dtype=torch.float32)

    weights = weights.type_as(q)

    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)

    # (N, H, S, S_kv) @ (N, H, S_kv, V) = (N, H, S, V)
    attns = torch.matmul(weights, v)

    return attns, weights if needs_weights else None


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    bias = causal_bias(q.size(-2), k.size(-2), q.device, q.dtype) if is_causal else None
    return naive_scaled_dot_product_attention(q, k, v, bias, needs_weights=True)


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
        # (N, S, M) -> (N, S, H, K)
        q = self.wq(q).unflatten(-1, (self.num_heads, -1))
        k = self.wk(k).unflatten(-1, (self.num_heads, -1))
        v = self.wv(v).unflatten(-1, (self.num_heads, -1))

        bias = causal_bias(q.size(1), k.size(1), q.device, q.dtype) if self.is_causal else None

        # (N, S, H, K) -> (N, H, S, K)
        q = q.transpose(-2, -3)
        k = k.transpose(-2, -3)
        v = v.transpose(-2, -3)

        # (N, H, S, K) @ (N, H, K, S_kv) = (N, H, S, S_kv)
        weights = torch.matmul(q, k.transpose(-1, -2))

        weights = weights * (q.size(-1) ** -0.5)

        if bias is not None:
            weights = weights + bias

        # For numerical stability run in single precision.
        weights = softmax(weights, dim=-1, dtype=torch.float32)

        weights = weights.type_as(q)

        weights = self.attn_dropout(weights)

        # (N, H, S, S_kv) @ (N, H, S_kv, V) = (N, H, S, V)
        attns = torch.matmul(weights, v)

        # (N, H, S, V) -> (N, S, H, V) -> (N, S, H * V)
        attns = attns.transpose(-2, -3).flatten(-2, -1)

        return self.resid_dropout(self.wo(attns))
