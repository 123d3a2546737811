# source: jadore801120/attention-is-all-you-need-pytorch, transformer/Modules.py (Bottle, BottleSoftmax,
#   ScaledDotProductAttention; stored commit 002815545bf743d0bf2b9d172af047b37e20b6e9), transformer/SubLayers.py
#   (MultiHeadAttention; stored commit 144902aa6fc57cfa294db487f796dad600210d5e) and get_attn_subsequent_mask
#   (transformer/Models.py) -- the 2017 version of the repository
# url: https://github.com/jadore801120/attention-is-all-you-need-pytorch
# licence: MIT (read in the repository's LICENSE: "MIT License, Copyright (c) 2017 Victor Huang")
# theirs: both parts, with their real bugs: `self.temper = np.power(d_model, 0.5)` scales every head by the model
#   width, not the head width (fixed upstream later); `torch.bmm(q, k.transpose(1, 2))` works on 3-D tensors only;
#   `outputs.view(mb_size, len_q, -1)` reads the head-major (n_head * mb_size) batch as if it were batch-major, so
#   heads and batch rows are mixed up when merged.
# adapted: Part 1 is their ScaledDotProductAttention built with d_model = the width of Q (a function has no model
#   width) and their subsequent mask. The mask: np.triu(...).astype('uint8') -> astype(bool) (today's masked_fill
#   refuses uint8) and `if seq.is_cuda: .cuda()` -> .to(seq.device); its shape taken from Q instead of token ids.
#   Part 2: their per-head weights w_qs (n_head, d_model, d_k) are rows of wq here (nn.Linear, bias=False), laid out
#   head-major exactly as their repeat/bmm gives; proj -> wo (bias=False); the residual + LayerNormalization at the
#   end dropped (the block's, not attention's); their attention's dropout is attn_dropout; resid_dropout added.
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


class Bottle(nn.Module):
    ''' Perform the reshape routine before and after an operation '''

    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)
        size = input.size()[:2]
        out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
        return out.view(size[0], size[1], -1)


class BottleSoftmax(Bottle, nn.Softmax):
    ''' Perform the reshape routine before and after a softmax operation'''
    pass


def get_attn_subsequent_mask(seq):
    ''' Get an attention mask to avoid using the subsequent info.'''
    attn_shape = (seq.size(0), seq.size(1), seq.size(1))
    subsequent_mask = np.triu(np.ones(attn_shape), k=1).astype(bool)
    subsequent_mask = torch.from_numpy(subsequent_mask).to(seq.device)
    return subsequent_mask


class ScaledDotProductAttention(nn.Module):
    ''' Scaled Dot-Product Attention '''

    def __init__(self, d_model, attn_dropout=0.1):
        super(ScaledDotProductAttention, self).__init__()
        self.temper = np.power(d_model, 0.5)
        self.dropout = nn.Dropout(attn_dropout)
        self.softmax = BottleSoftmax()

    def forward(self, q, k, v, attn_mask=None):

        attn = torch.bmm(q, k.transpose(1, 2)) / self.temper

        if attn_mask is not None:

            assert attn_mask.size() == attn.size(), \
                    'Attention mask shape {} mismatch ' \
                    'with Attention logit tensor shape ' \
                    '{}.'.format(attn_mask.size(), attn.size())

            attn.data.masked_fill_(attn_mask, -float('inf'))

        attn = self.softmax(attn)
        attn = self.dropout(attn)
        output = torch.bmm(attn, v)

        return output, attn


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    attention = ScaledDotProductAttention(Q.size(-1), attn_dropout=0.0)
    return attention(Q, K, V, attn_mask=get_attn_subsequent_mask(Q) if is_causal else None)


class MultiHeadAttention(nn.Module):
    ''' Multi-Head Attention module '''

    def __init__(self, args, is_causal: bool = False):
        super(MultiHeadAttention, self).__init__()

        n_head, d_model = args.n_heads, args.dim
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.d_v = d_model // n_head
        self.is_causal = is_causal

        self.wq = nn.Linear(d_model, n_head * self.d_k, bias=False)
        self.wk = nn.Linear(d_model, n_head * self.d_k, bias=False)
        self.wv = nn.Linear(d_model, n_head * self.d_v, bias=False)

        self.attention = ScaledDotProductAttention(d_model, attn_dropout=args.dropout)
        self.attn_dropout = self.attention.dropout
        self.wo = nn.Linear(n_head * self.d_v, d_model, bias=False)

        self.resid_dropout = nn.Dropout(args.dropout)

    def forward(self, q, k, v):

        d_k, d_v = self.d_k, self.d_v
        n_head = self.n_head

        residual = q

        mb_size, len_q, d_model = q.size()
        mb_size, len_k, d_model = k.size()
        mb_size, len_v, d_model = v.size()

        # treat the result as a (n_head * mb_size) size batch
        q_s = self.wq(q).view(mb_size, len_q, n_head, d_k).permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k)
        k_s = self.wk(k).view(mb_size, len_k, n_head, d_k).permute(2, 0, 1, 3).contiguous().view(-1, len_k, d_k)
        v_s = self.wv(v).view(mb_size, len_v, n_head, d_v).permute(2, 0, 1, 3).contiguous().view(-1, len_v, d_v)

        # perform attention, result size = (n_head * mb_size) x len_q x d_v
        attn_mask = get_attn_subsequent_mask(q) if self.is_causal else None
        outputs, attns = self.attention(q_s, k_s, v_s,
                                        attn_mask=attn_mask.repeat(n_head, 1, 1) if attn_mask is not None else None)

        # back to original mb_size batch
        outputs = outputs.view(mb_size, len_q, -1)            # mb_size x len_q x (n_head*d_v)

        # project back to residual size
        outputs = self.wo(outputs.view(-1, outputs.size(2))).view_as(residual)
        outputs = self.resid_dropout(outputs)

        return outputs
