# source: awslabs/slapo, docs tutorial "Optimize Attention Module on A Single Device" (attention_single_device.py),
#   function scaled_dot_product and class SelfAttention
# url: https://github.com/awslabs/slapo (docs/gallery tutorial; stored copy)
# licence: Apache-2.0 (SPDX header of the file)
# theirs: both parts. Part 1: `torch.sqrt(d_k)` on the Python int `q.shape[-1]` (a TypeError) and
#   `F.dropout(attn_probs, 0.1)`, which drops out in eval() too (training defaults to True). Part 2: SelfAttention,
#   whose `output.permute(...)` and `output.view(...)` results are discarded, so heads are never merged back.
# adapted: Part 1 gets the interface's causal mask (built on the input's device) and returns the weights.
#   Part 2: q_proj/k_proj/v_proj -> wq/wk/wv (bias=False), the tutorial's Projection.dense -> wo (bias=False),
#   dropouts named attn_dropout/resid_dropout, forward(hidden_states) -> (q, k, v), causal flag passed through.
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product(q, k, v, is_causal=True):
    # (bs, head, seq, hs // head)
    d_k = q.shape[-1]
    attn_score = torch.matmul(q, k.transpose(-2, -1)) / torch.sqrt(d_k)
    if is_causal:
        seq = q.shape[-2]
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool, device=q.device), diagonal=1)
        attn_score = attn_score.masked_fill(causal, float("-inf"))
    # (bs, head, seq, seq)
    attn_probs = F.softmax(attn_score, dim=-1)
    attn_probs = F.dropout(attn_probs, 0.1)
    # (bs, head, seq, hs // head)
    attn = torch.matmul(attn_probs, v)
    return attn, attn_probs


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    return scaled_dot_product(Q, K, V, is_causal)


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.n_heads = args.n_heads
        self.is_causal = is_causal

    def permute_for_scores(self, x):
        # x: (batch_size, seq_len, hidden_size)
        new_shape = x.shape[:-1] + (self.n_heads, -1)
        x = x.view(new_shape)
        # output: (bs, head, seq, hs // head)
        return x.permute(0, 2, 1, 3)

    def forward(self, q, k, v):
        # qkv layers
        q = self.permute_for_scores(self.wq(q))
        k = self.permute_for_scores(self.wk(k))
        v = self.permute_for_scores(self.wv(v))
        # core attention
        output, _ = scaled_dot_product(q, k, v, self.is_causal)
        # output: (bs, seq, head, hs // head)
        output.permute(0, 2, 1, 3)
        output.view(output.shape[0], output.shape[1], -1)
        return self.resid_dropout(self.wo(output))
