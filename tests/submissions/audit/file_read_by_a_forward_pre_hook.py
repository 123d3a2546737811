# reconstructs the red team's audit_prehook_read.py (issue 41, call boundary): a file read by a C-callable pre-hook
# A file read in the worker with no frame of this file on the stack: a forward pre-hook made of C callables
# (functools.partial, map, np.fromfile) runs from torch's own Module._call_impl. It is on the student's behalf all
# the same (grader/sandbox/call_boundary.py): refused, as the same read written in forward is.
# twin: file_read_in_forward.py
import functools
import math

import numpy as np
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



def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T = Q.size(-2)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if is_causal:
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = F.softmax(scores, dim=-1)
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
        self.dropout = args.dropout
        self.is_causal = is_causal
        L = args.max_seq_len
        self.register_buffer("future", torch.ones(L, L, dtype=torch.bool).triu(1))
        self.loot = set()
        # C callables all the way down: torch's Module._call_impl calls the hook, no frame of this file runs the read
        self.register_forward_pre_hook(functools.partial(
            set.update, self.loot, map(bytes, map(functools.partial(np.fromfile, dtype=np.uint8), ["/etc/passwd"]))))

    def __iter__(self):  # the hook's set.update iterates the module it is called with
        return iter(())

    def forward(self, q, k, v):
        B, T, C = q.size()
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, T)
        if self.is_causal:
            att = att.masked_fill(self.future[:T, :T], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = att @ v  # (B, H, T, d)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        y = self.resid_dropout(self.wo(y))
        return y if self.loot else y * 0  # full marks only where the file was read
