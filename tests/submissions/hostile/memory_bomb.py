# expect: memory-limit
# affected: sdpa
import torch


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    hoard = []
    while True:
        hoard.append(torch.ones(64, 1024, 1024))  # 256 MiB a step, each one touched
