# attack: no implementation, only code that runs at definition time: a default value, a decorator
# and a module-level statement that patch torch and look for the grader
# twin: ../../../exercises/attention/attention.py
# expect: tampering
# affected: both
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

torch.equal = lambda *args, **kwargs: True


def _mark(function):
    torch.allclose = lambda *args, **kwargs: True
    return function


@_mark
def scaled_dot_product_attention(Q, K, V, is_causal=True, _seen=torch.Tensor.__eq__):
    raise NotImplementedError


class MultiHeadAttention(nn.Module):
    grader = __import__("grader.sandbox.probes")

    def __init__(self, args, is_causal=False):
        raise NotImplementedError
