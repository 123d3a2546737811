# expect: tampering
# affected: both
import sys
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    sys.exit(0)  # a class body runs when the class is defined, i.e. at import


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    raise SystemExit(3)
