"""Part 3 of the kv_cache lab: GroupedQueryAttention, on a whole prompt and decoding step by step with a KV cache.

ORDER is the order the checks run and are reported in.
"""
from grader.checks.gqa import decoding  # noqa: F401  (importing registers the checks)

ORDER = ("gqa.decode", "gqa.causal")
