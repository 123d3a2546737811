# expect: hardcoded-device
# part: sdpa
# The hostile twin of correct/numpy_finfo_through_a_cpu_copy.py: the mask itself is copied off the device with .cpu() and kept there, so on a GPU masked_fill meets a CPU mask.
# 已提供 / Provided：后面的代码都依赖这些导入。
import math
import numpy as np
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


# 已提供 / Provided：多头注意力的超参数。
@dataclass
class ModelArgs:
    dim: int = 64  # 模型维度 d_model（embedding dim），必须能被 n_heads 整除
    n_heads: int = 4  # 注意力头数 H
    dropout: float = 0.0  # dropout 概率，只在 train() 模式下生效
    max_seq_len: int = 256  # 因果遮罩预先建好的最大长度 L


def scaled_dot_product_attention(
    Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, is_causal: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """缩放点积注意力 / scaled dot-product attention.

    Q, K: (..., T, d_k); V: (..., T, d_v), with any number of leading batch dims.
    Returns (out, weights): out (..., T, d_v), weights (..., T, T), each row of weights sums to 1.
    is_causal=True: position i attends only to j <= i, so weights above the diagonal are exactly 0.0.
    """
    T, d_k = Q.size(-2), Q.size(-1)

    # TODO 1a（打分）：scores = Q·Kᵀ / √d_k，形状 (..., T, T)；用 K.transpose(-2, -1) 交换最后两维。
    #   易错点：要写 torch.matmul（或 @），不能写裸的 matmul(...)，没有 `torch.` 前缀会 NameError。
    # TODO 1a (scores): Q·Kᵀ / √d_k, shape (..., T, T). Pitfall: torch.matmul, not a bare matmul(...).
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)  # (..., T, T)

    if is_causal:
        # TODO 1b（因果遮罩）：softmax 之前把对角线上方（未来位置）的分数设为 -inf，对角线保留。
        #   易错点：遮罩必须建在输入所在的设备上（device=Q.device），否则在 GPU 上会报设备不一致。
        # TODO 1b (causal mask): -inf strictly above the diagonal, before softmax; create it with device=Q.device.
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1).cpu()  # (T, T), now on the CPU
        lowest = float(np.finfo(scores.new_zeros(()).cpu().numpy().dtype).min)  # a CPU copy: NumPy reads no GPU memory
        scores = scores.masked_fill(future, lowest)  # (..., T, T)

    # TODO 1c（归一化与加权）：沿最后一维（dim=-1，键的维度）做 softmax 得到 weights，再用 torch.matmul 乘 V。
    # TODO 1c (weights and output): softmax over dim=-1 (the keys), then torch.matmul(weights, V) -> (..., T, d_v).
    weights = F.softmax(scores, dim=-1)  # (..., T, T)
    out = torch.matmul(weights, V)  # (..., T, d_v)
    return out, weights


class MultiHeadAttention(nn.Module):
    """多头注意力 / multi-head attention: (B, T, dim) -> (B, T, dim), causal when is_causal=True."""

    def __init__(self, args: ModelArgs, is_causal: bool = False):
        super().__init__()
        assert args.dim % args.n_heads == 0, "dim 必须能被 n_heads 整除 / dim must be divisible by n_heads"
        self.n_heads = args.n_heads
        self.head_dim = args.dim // args.n_heads

        # TODO 2a（投影与 dropout）：wq, wk, wv, wo = nn.Linear(..., bias=False)；attn_dropout 与 resid_dropout。
        #   易错点：是 nn.Dropout，D 大写；nn.dropout 不存在（AttributeError）。
        # TODO 2a (layers): wq, wk, wv, wo as nn.Linear(..., bias=False); two nn.Dropout (capital D, not nn.dropout).
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.attn_dropout = nn.Dropout(args.dropout)
        self.resid_dropout = nn.Dropout(args.dropout)

        # TODO 2b（因果标志与遮罩）：把参数保存为 self.is_causal（拼写是 is_causal，不是 is_casual）；
        #   按 max_seq_len 建 (1, 1, L, L) 的遮罩（对角线上方 -inf，其余 0），用 register_buffer 注册为 "mask"。
        # TODO 2b (flag and mask): store self.is_causal (not is_casual); register_buffer a (1, 1, L, L) mask, -inf above the diagonal.
        self.is_causal = is_causal
        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float("-inf"))
        self.register_buffer("mask", torch.triu(mask, diagonal=1))  # (1, 1, L, L)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q, k, v: (B, T, dim) -> (B, T, dim)."""
        B, T, C = q.size()  # batch, sequence length, embedding dim

        # TODO 2c（投影并拆头）：(B, T, C) -> wq/wk/wv -> .view(B, T, H, d) -> .transpose(1, 2) -> (B, H, T, d)。
        #   易错点：类型注解写 torch.Tensor（不是 torch.Tenser，拼错会在定义类时就 AttributeError）。
        # TODO 2c (split heads): project, view(B, T, H, d), transpose(1, 2). Annotations: torch.Tensor, not torch.Tenser.
        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.wk(k).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        v = self.wv(v).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)

        # TODO 2d（打分）：用 torch.matmul 计算 q·kᵀ，除以 √head_dim（每个头的维度），不是 √dim。
        # TODO 2d (scores): torch.matmul(q, kᵀ) scaled by √head_dim, not √dim -> (B, H, T, T).
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # (B, H, T, T)

        if self.is_causal:
            # TODO 2e（遮罩）：把 buffer 切到当前长度 self.mask[:, :, :T, :T] 再加到分数上（buffer 已随模块在正确的设备上）。
            # TODO 2e (mask): add the buffer sliced to the current length, self.mask[:, :, :T, :T].
            att = att + self.mask[:, :, :T, :T]  # (B, H, T, T)

        # TODO 2f（权重与加权求和）：softmax(dim=-1)，再 attn_dropout，然后用 torch.matmul 乘 v。
        # TODO 2f (weights): softmax over dim=-1, attn_dropout, then torch.matmul with v -> (B, H, T, d).
        att = self.attn_dropout(F.softmax(att, dim=-1))  # (B, H, T, T)
        y = torch.matmul(att, v)  # (B, H, T, d)

        # TODO 2g（合并多头）：.transpose(1, 2) 之后要先 .contiguous() 再 .view(B, T, C)（或者用 .reshape），然后 wo 与 resid_dropout。
        # TODO 2g (merge heads): after transpose(1, 2) call .contiguous() before .view(B, T, C) (or .reshape); then wo, resid_dropout.
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        y = self.resid_dropout(self.wo(y))  # (B, T, C)
        return y
