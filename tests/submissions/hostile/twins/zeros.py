# The honest twin of patched_comparisons.py and lying_subclass.py: the same wrong answers, no tricks.
import torch


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T = Q.size(-2)
    return torch.zeros(*Q.shape[:-1], V.size(-1)), torch.zeros(*Q.shape[:-2], T, T)
