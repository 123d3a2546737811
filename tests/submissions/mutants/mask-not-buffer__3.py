# expect: mask-not-buffer
# part: mha
# why: the mask made once, at the first call, on that call's device, and kept as a plain attribute: model.to(device) after a call leaves it behind
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


'''注意力计算函数'''
def scaled_dot_product_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, is_causal: bool = True):
    # 获取键向量的维度
    d_k = Q.size(-1)
    seq_len = Q.size(-2)
    # 计算 Q 与 K 的内积并除以根号 d_k
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if is_causal:
        # 对角线上方（未来的位置）是 True，要被遮住
        mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool, device=Q.device), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
    # softmax 得到注意力权重
    p_attn = F.softmax(scores, dim=-1)
    # 根据权重对 value 加权求和
    return torch.matmul(p_attn, V), p_attn


'''多头自注意力计算模块'''
class MultiHeadAttention(nn.Module):

    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        # 隐藏层维度必须是头数的整数倍
        assert args.dim % args.n_heads == 0
        # 本地计算头数
        self.n_local_heads = args.n_heads
        # 每个头的维度，等于模型维度除以头的总数
        self.head_dim = args.dim // args.n_heads
        # Wq, Wk, Wv 参数矩阵
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        # 输出权重矩阵
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        # 注意力的 dropout
        self.attn_dropout = nn.Dropout(args.dropout)
        # 残差连接的 dropout
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

        self.max_seq_len = args.max_seq_len
        self.mask = None  # 第一次 forward 时再建 / made at the first call

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        # 获取批次大小和序列长度，[batch_size, seq_len, dim]
        bsz, seqlen, _ = q.shape

        # 计算查询（Q）、键（K）、值（V）
        xq, xk, xv = self.wq(q), self.wk(k), self.wv(v)

        # 将 Q、K、V 拆分成多头，(B, T, H, d)，然后交换维度变成 (B, H, T, d)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xq = xq.transpose(1, 2)
        xk = xk.transpose(1, 2)
        xv = xv.transpose(1, 2)

        # 注意力计算 QK^T / sqrt(head_dim)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        # 掩码自注意力必须有注意力掩码
        if self.is_causal:
            if self.mask is None:  # 建在第一次调用时输入所在的设备上 / on the first call's device
                L = self.max_seq_len
                self.mask = torch.triu(torch.full((1, 1, L, L), float("-inf"), device=q.device, dtype=q.dtype),
                                       diagonal=1)
            # 这里截取到序列长度
            scores = scores + self.mask[:, :, :seqlen, :seqlen]
        # 计算 softmax
        scores = F.softmax(scores, dim=-1)
        # 做 Dropout
        scores = self.attn_dropout(scores)
        # V * Score
        output = torch.matmul(scores, xv)

        # 恢复时间维度并合并头
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)

        # 最终投影回残差流
        output = self.wo(output)
        output = self.resid_dropout(output)
        return output
