# expect: timeout
# affected: sdpa
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    while True:
        pass
