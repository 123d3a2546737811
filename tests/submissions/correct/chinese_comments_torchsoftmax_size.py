# style: 中文注释, torch.softmax, x.size(), kt = k.transpose(2, 3), float tril buffer compared with == 0, ones_like mask in SDPA
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64          # 模型维度
    n_heads: int = 4       # 头数
    dropout: float = 0.0   # dropout 概率
    max_seq_len: int = 256 # 最大序列长度


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    # 1. 计算注意力分数 QK^T / sqrt(d_k)
    d_k = Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    # 2. 因果遮罩：对角线上方（未来的位置）填 -inf，ones_like 自动在同一个设备上
    if is_causal:
        future = torch.ones_like(scores, dtype=torch.bool).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    # 3. softmax 归一化（在最后一维，也就是 key 的维度上）
    weights = torch.softmax(scores, dim=-1)
    # 4. 加权求和
    output = torch.matmul(weights, V)
    return output, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        # 每个头的维度 = 总维度 / 头数
        assert args.dim % args.n_heads == 0
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads
        # 四个线性层，都不要偏置
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        # 两个 dropout：注意力权重上一个，输出上一个
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal
        # 下三角全 1 矩阵（float），注册成 buffer，会跟着模型一起 .to(device)
        self.register_buffer("tril_mask", torch.tril(torch.ones(1, 1, args.max_seq_len, args.max_seq_len)))

    def forward(self, q, k, v):
        bsz, seqlen, dim = q.size()
        # 线性变换后拆成多头：(B, T, dim) -> (B, T, H, d) -> (B, H, T, d)
        xq = self.wq(q).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xk = self.wk(k).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        xv = self.wv(v).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        kt = xk.transpose(2, 3)  # (B, H, d, T)
        scores = torch.matmul(xq, kt) / math.sqrt(self.head_dim)
        if self.is_causal:
            # 截取到当前长度再用
            scores = scores.masked_fill(self.tril_mask[:, :, :seqlen, :seqlen] == 0, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        probs = self.attn_dropout(probs)
        out = torch.matmul(probs, xv)
        # 合并多头：transpose 之后必须 contiguous 才能 view
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, dim)
        out = self.wo(out)
        return self.resid_dropout(out)
