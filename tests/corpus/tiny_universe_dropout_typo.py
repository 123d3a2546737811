# source: datawhalechina/tiny-universe, content/TinyTransformer/tiny_transformer.py, function attention and class
#   MultiHeadAttention (the manual, non-flash branch); stored commit 2fd13b47928cd01d5a35b60dc37bd2e8132decbb
#   (the line `att = dropout_module(dropout)` became `att = dropout_module(att)` in fb7e57a7881368d2d2914f3f587797e3a784a516)
# url: https://github.com/datawhalechina/tiny-universe/blob/main/content/TinyTransformer/tiny_transformer.py
# licence: CC BY-NC-SA 4.0 (the README's LICENSE section; the repository has no LICENSE file)
# theirs: both parts. Part 1 is their stand-alone `attention` function: after the softmax, `att =
#   dropout_module(dropout)` calls the dropout module on the dropout RATE (None by default) instead of on the weights,
#   so the weights are thrown away and every call raises. Part 2 is the module's manual branch (nanoGPT style): right.
# adapted: Part 1: renamed, returns the weights too; their `mask` argument (a (1, 1, block_size, block_size) tril) is
#   built when is_causal and none is given, as their module builds it, on q's device; `dropout_module` defaults to
#   nn.Dropout(0.0) (the exercise's Part 1 has no dropout; their default None would raise on its own), so the only
#   failure left is theirs. Part 2: config -> args (n_embd -> dim, n_head -> n_heads, block_size -> max_seq_len);
#   c_attns[0..2] -> wq/wk/wv and c_proj -> wo, bias=False; the flash branch dropped (it calls
#   F.scaled_dot_product_attention, which the exercise forbids), so the mask buffer is always registered.
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


'''注意力计算函数'''
def scaled_dot_product_attention(q, k, v, is_causal=True, dropout_module=nn.Dropout(0.0), dropout=None, mask=None):
    if is_causal and mask is None:
        T = k.size(-2)
        mask = torch.tril(torch.ones(T, T, device=q.device)).view(1, 1, T, T)
    # 计算 QK^T / sqrt(d_k)，维度为 (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    # 如果是解码器的 Casual LM，需要 mask 掉右上角的元素
    if is_causal:
        # 这里截取到序列长度，因为有些序列可能比 block_size 短
        att = att.masked_fill(mask[:,:,:k.size(-2),:k.size(-2)] == 0, float('-inf'))
    # 计算 softmax，维度为 (B, nh, T, T)
    att = F.softmax(att, dim=-1)
    # Attention Dropout
    att = dropout_module(dropout)
    # V * Score，维度为(B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
    y = att @ v
    return y, att


'''多头注意力计算模块'''
class MultiHeadAttention(nn.Module):

    def __init__(self, args, is_causal=False):
        super().__init__()
        # 隐藏层维度必须是头数的整数倍
        assert args.dim % args.n_heads == 0
        # Wq, Wk, Wv 参数矩阵，每个参数矩阵为 n_embd x n_embd
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        # 输出的线性层，维度为 n_embd x n_embd
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        # 注意力的 dropout
        self.attn_dropout = nn.Dropout(args.dropout)
        # 残差连接的 dropout
        self.resid_dropout = nn.Dropout(args.dropout)
        # 头数
        self.n_head = args.n_heads
        # 隐藏层维度
        self.n_embd = args.dim
        # Dropout 概率
        self.dropout = args.dropout
        # 是否是解码器的 Casual LM
        self.is_causal = is_causal
        # bias 是一个上三角矩阵，维度为 1 x 1 x block_size x block_size，block_size 为序列最大长度
        self.register_buffer("bias", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len))
                                    .view(1, 1, args.max_seq_len, args.max_seq_len))

    def forward(self, query, key, value):
        # 输入为 query、key、value，维度为 (B, T, n_embed)
        B, T, C = query.size() # batch size, sequence length, embedding dimensionality (n_embd)
        # 计算 Q、K、V，输入通过参数矩阵层，维度为 (B, T, n_embed) x (n_embed, n_embed) -> (B, T, n_embed)
        q, k, v  = [layer(x) for layer, x in zip((self.wq, self.wk, self.wv), (query, key, value))]
        # 将 Q、K、V 拆分成多头，维度为 (B, T, n_head, C // n_head)，然后交换维度，变成 (B, n_head, T, C // n_head)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

        # 手动实现注意力计算
        # 计算 QK^T / sqrt(d_k)，维度为 (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        # 如果是解码器的 Casual LM，需要 mask 掉右上角的元素
        if self.is_causal:
            # 这里截取到序列长度，因为有些序列可能比 block_size 短
            att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        # 计算 softmax，维度为 (B, nh, T, T)
        att = F.softmax(att, dim=-1)
        # Attention Dropout
        att = self.attn_dropout(att)
        # V * Score，维度为(B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = att @ v
        # 将多头的结果拼接起来, 先交换维度为 (B, T, n_head, C // n_head)，再拼接成 (B, T, n_head * C // n_head)
        y = y.transpose(1, 2).contiguous().view(B, T, C)

        # 经过输出层计算，维度为 (B, T, C)，再经过线性层残差连接
        y = self.resid_dropout(self.wo(y))
        return y
