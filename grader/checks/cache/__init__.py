"""Part 2 of the kv_cache lab: KVCache, two preallocated buffers and update(start_pos, k, v) writing into them in
place and returning the keys and values written so far.

ORDER is the order the checks run and are reported in: the buffers and the shapes update returns, the values it
returns after every step, that the buffers themselves hold the writes, then how it runs (device, loops, the gates).
"""
from grader.checks.cache import behaviour, runtime  # noqa: F401  (importing registers the checks)

ORDER = ("cache.shapes", "cache.update", "cache.in_place", "cache.device", "cache.vectorized",
         "cache.own_implementation", "cache.rules")
