# expect: syntax-error
# affected: both
import torch

def scaled_dot_product_attention(Q, K, V, is_causal=True)
    return Q, K
