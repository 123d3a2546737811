"""Part 1 of the kv_cache lab: repeat_kv(x, n_rep) -> x's key/value heads, each repeated for its group of query heads.

ORDER is the order the checks run and are reported in: the shapes it promises and the values (which head went
where), then the gradients, then how it runs (devices, loops, the gates). A check that reads an earlier one's outcome
(gradients need correct values; device and vectorized the probed shapes) comes after it.
"""
from grader.checks.repeat import behaviour, runtime  # noqa: F401  (importing registers the checks)

ORDER = ("repeat.shapes", "repeat.values", "repeat.gradients", "repeat.device", "repeat.vectorized",
         "repeat.own_implementation", "repeat.rules")
