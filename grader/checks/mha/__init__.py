"""Part 2 checks: MultiHeadAttention(args, is_causal=False) with forward(q, k, v) -> (B, T, dim).

ORDER is the order the checks run and are reported in: what it computes, then its state (precision, mask
buffer, dropout, gradients), then how it runs (devices, loops, the gates). It is data, not the order of
imports: a check that reads an earlier one's outcome (`ctx.outcomes`) comes after it here, and
tests/checks/test_check_order.py holds that.
"""
from grader.checks.mha import behaviour, gradients, runtime, state  # noqa: F401  (importing registers the checks)

ORDER = ("mha.computes_attention", "mha.interface", "mha.shapes", "mha.causal_no_leak", "mha.values",
         "mha.low_precision", "mha.mask_buffer", "mha.dropout", "mha.gradients", "mha.device", "mha.vectorized",
         "mha.own_implementation", "mha.rules")
