# source: datawhalechina/happy-llm, docs/chapter2/code/transformer.py, class MultiHeadAttention; stored commit b70a462400fb31ff25d4ff4c069cdcbda9a7aacb
# url: https://github.com/datawhalechina/happy-llm/blob/main/docs/chapter2/code/transformer.py
# licence: CC BY-NC-SA 4.0 (the repository's LICENSE)
# theirs: Part 2. Part 1 is written plainly in the same style (torch.matmul, additive triu(-inf) mask, float softmax).
# adapted: args.n_embd -> args.dim in the projections (the tutorial's ModelArgs has both; ours has only dim); the
#   tutorial's long Chinese comments shortened; the unused model_parallel_size kept.
import math
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4
    dropout: float = 0.0
    max_seq_len: int = 256


def scaled_dot_product_attention(Q, K, V, is_causal: bool = True):
    # Q、K 的最后一维是 d_k
    d_k = Q.size(-1)
    seqlen = Q.size(-2)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if is_causal:
        mask = torch.full((seqlen, seqlen), float("-inf"), device=Q.device)
        mask = torch.triu(mask, diagonal=1)
        scores = scores + mask
    p_attn = F.softmax(scores.float(), dim=-1).type_as(Q)
    return torch.matmul(p_attn, V), p_attn


class MultiHeadAttention(nn.Module):

    def __init__(self, args: ModelArgs, is_causal=False):
        super().__init__()
        # 隐藏层维度必须是头数的整数倍
        assert args.dim % args.n_heads == 0
        # 模型并行处理大小，默认为1。
        model_parallel_size = 1
        self.n_local_heads = args.n_heads // model_parallel_size
        # 每个头的维度
        self.head_dim = args.dim // args.n_heads

        # Wq, Wk, Wv 参数矩阵
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        # 输出权重矩阵
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)
        self.is_causal = is_causal

        # 上三角矩阵，用于遮蔽未来信息（多头注意力，多一个维度）
        if is_causal:
            mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
            mask = torch.triu(mask, diagonal=1)
            self.register_buffer("mask", mask)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        bsz, seqlen, _ = q.shape

        xq, xk, xv = self.wq(q), self.wk(k), self.wv(v)

        # (B, T, n_head, C // n_head) -> (B, n_head, T, C // n_head)
        xq = xq.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xq = xq.transpose(1, 2)
        xk = xk.transpose(1, 2)
        xv = xv.transpose(1, 2)

        # QK^T / sqrt(d_k): (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.head_dim)
        if self.is_causal:
            assert hasattr(self, 'mask')
            scores = scores + self.mask[:, :, :seqlen, :seqlen]
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        scores = self.attn_dropout(scores)
        output = torch.matmul(scores, xv)

        # (B, n_head, T, hs) -> (B, T, n_head * hs)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)

        output = self.wo(output)
        output = self.resid_dropout(output)
        return output
