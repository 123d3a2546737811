# source: Charmaineem/Hands-On-LLMs, Transformer/layers.py, class Attention; stored commit 6371e45cf1b349b4f973d66e1a42a9528e77a2b5
# url: https://github.com/Charmaineem/Hands-On-LLMs/blob/main/Transformer/layers.py
# licence: none stated (no LICENSE file in the index, none in the file)
# theirs: Part 1: `d_k = k.dim()` is the number of tensor dimensions (2, 3, 4, ...), not the key width, so the
#   scores are divided by sqrt(ndim); the debugging `print(s)` kept. Part 2 is written plainly in the same style.
# adapted: the module's forward(q, k, v) became the function; a causal mask (on the input's device) added for
#   is_causal, and the weights returned.
import math
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


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
  d_k = k.dim()
  dot = torch.matmul(q, k.transpose(-2, -1))
  if is_causal:
    T = q.size(-2)
    dot = dot.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), 1), float('-inf'))
  s = F.softmax(dot/math.sqrt(d_k), dim=-1)
  print(s)
  output = torch.matmul(s, v)
  return output, s


class MultiHeadAttention(nn.Module):
  def __init__(self, args, is_causal: bool = False):
    super(MultiHeadAttention, self).__init__()
    self.h = args.n_heads
    self.wq = nn.Linear(args.dim, args.dim, bias=False)
    self.wk = nn.Linear(args.dim, args.dim, bias=False)
    self.wv = nn.Linear(args.dim, args.dim, bias=False)
    self.wo = nn.Linear(args.dim, args.dim, bias=False)
    self.attn_dropout = nn.Dropout(args.dropout)
    self.resid_dropout = nn.Dropout(args.dropout)
    self.is_causal = is_causal
    self.register_buffer("mask", torch.triu(torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool), 1))

  def forward(self, q, k, v):
    B, T, D = q.shape
    q = self.wq(q).view(B, T, self.h, D // self.h).transpose(1, 2)
    k = self.wk(k).view(B, T, self.h, D // self.h).transpose(1, 2)
    v = self.wv(v).view(B, T, self.h, D // self.h).transpose(1, 2)
    dot = torch.matmul(q, k.transpose(-2, -1))
    if self.is_causal:
      dot = dot.masked_fill(self.mask[:T, :T], float('-inf'))
    s = self.attn_dropout(F.softmax(dot / math.sqrt(D // self.h), dim=-1))
    output = torch.matmul(s, v).transpose(1, 2).contiguous().view(B, T, D)
    return self.resid_dropout(self.wo(output))
