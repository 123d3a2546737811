# source: transformer/Modules.py, class ScaledDotProductAttention, as shipped in the Hugging Face Space
#   Ionut-Bostan/Emotion_Aware_TTS (the FastSpeech 2 code of ming024/FastSpeech2, itself from
#   jadore801120/attention-is-all-you-need-pytorch); stored revision decb23fa38a674375590f7fc3c9ed17d483d6367
# url: https://huggingface.co/spaces/Ionut-Bostan/Emotion_Aware_TTS/blob/main/transformer/Modules.py
# licence: MIT (ming024/FastSpeech2)
# theirs: Part 1: `torch.bmm`, `k.transpose(1, 2)` and `nn.Softmax(dim=2)` all assume 3-D (batch, T, d) input.
#   Part 2 is written plainly in the same style (heads folded into the batch, as their MultiHeadAttention does).
# adapted: the module became the function; temperature = np.power(d_k, 0.5) as their MultiHeadAttention passes it;
#   the boolean mask argument built as the causal mask (on the input's device) when is_causal.
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(q, k, v, is_causal: bool = True):
    temperature = np.power(k.shape[-1], 0.5)
    softmax = nn.Softmax(dim=2)
    mask = None
    if is_causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1)

    attn = torch.bmm(q, k.transpose(1, 2))
    attn = attn / temperature

    if mask is not None:
        attn = attn.masked_fill(mask, -np.inf)

    attn = softmax(attn)
    output = torch.bmm(attn, v)

    return output, attn


class MultiHeadAttention(nn.Module):
    def __init__(self, args, is_causal: bool = False):
        super().__init__()
        self.n_head = args.n_heads
        self.d_k = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.softmax = nn.Softmax(dim=2)
        self.is_causal = is_causal
        self.register_buffer("mask", torch.ones(args.max_seq_len, args.max_seq_len, dtype=torch.bool).triu(1))

    def forward(self, q, k, v):
        d_k, n_head = self.d_k, self.n_head
        sz_b, len_q, _ = q.size()

        q = self.wq(q).view(sz_b, len_q, n_head, d_k)
        k = self.wk(k).view(sz_b, len_q, n_head, d_k)
        v = self.wv(v).view(sz_b, len_q, n_head, d_k)
        q = q.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)  # (n*b) x lq x dk
        k = k.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)  # (n*b) x lk x dk
        v = v.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)  # (n*b) x lv x dv

        attn = torch.bmm(q, k.transpose(1, 2)) / np.power(d_k, 0.5)
        if self.is_causal:
            attn = attn.masked_fill(self.mask[:len_q, :len_q], -np.inf)
        attn = self.attn_dropout(self.softmax(attn))
        output = torch.bmm(attn, v)

        output = output.view(n_head, sz_b, len_q, d_k)
        output = output.permute(1, 2, 0, 3).contiguous().view(sz_b, len_q, -1)  # b x lq x (n*dv)
        return self.resid_dropout(self.wo(output))
