"""Part 3 of the kv_cache lab: GroupedQueryAttention(args) with forward(x, cache=None, start_pos=0) -> (B, T, dim).

ORDER is the order the checks run and are reported in: the whole prompt's pass (its shapes, with the projections the
interface promises, then its values against the float64 reference, then its gradients), then decoding step by step
with a cache (each step against the full causal pass, then causality at every step), then how it runs (devices,
loops, the gates). A check that reads an earlier one's outcome (gradients need correct values; device and vectorized
a configuration the module runs on) comes after it.
"""
from grader.checks.gqa import behaviour, decoding, runtime  # noqa: F401  (importing registers the checks)

ORDER = ("gqa.shapes", "gqa.values", "gqa.gradients", "gqa.decode", "gqa.causal", "gqa.device", "gqa.vectorized",
         "gqa.own_implementation", "gqa.rules")
