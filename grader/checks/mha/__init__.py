"""Part 2 checks: MultiHeadAttention(args, is_causal=False) with forward(q, k, v) -> (B, T, dim).

Importing the package registers its checks in this order: what it computes, then its state
(precision, mask buffer, dropout, gradients), then how it runs (devices, loops, the gates).
"""
from grader.checks.mha import behaviour, state, runtime  # noqa: F401
