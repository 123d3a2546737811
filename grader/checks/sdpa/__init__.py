"""Part 1 checks: scaled_dot_product_attention(Q, K, V, is_causal=True) -> (out, weights).

ORDER is the order the checks run and are reported in: what it computes, then numerics, then how it runs
(devices, loops, the gates). It is data, not the order of imports: a check that reads an earlier one's outcome
(`ctx.outcomes`: low_precision and gradients need correct values, device and vectorized the probed shapes)
comes after it here, and tests/checks/test_check_order.py holds that.
"""
from grader.checks.sdpa import behaviour, numerics, runtime  # noqa: F401  (importing registers the checks)

ORDER = ("sdpa.computes_attention", "sdpa.shapes", "sdpa.causal_zeros", "sdpa.values", "sdpa.low_precision",
         "sdpa.no_future_leak", "sdpa.gradients", "sdpa.device", "sdpa.vectorized", "sdpa.own_implementation",
         "sdpa.rules")
