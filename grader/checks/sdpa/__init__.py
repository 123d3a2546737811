"""Part 1 checks: scaled_dot_product_attention(Q, K, V, is_causal=True) -> (out, weights).

Importing the package registers its checks in this order: what it computes, then numerics, then
how it runs (devices, loops, the gates).
"""
from grader.checks.sdpa import behaviour, numerics, runtime  # noqa: F401
