# expect: -
# affected: sdpa
# Borrows the reference solution from the instructor's repo (any path it can guess) instead of implementing.
import glob
import os


def _reference():
    found = {}
    for pattern in ("/work/*/solutions/attention/attention.py", "/*/*/solutions/attention/attention.py",
                    "/tmp/*/solutions/attention/attention.py", "../../solutions/attention/attention.py",
                    os.path.expanduser("~/*/solutions/attention/attention.py"), "/**/solutions/attention/attention.py"):
        for path in glob.glob(pattern, recursive=True):
            exec(open(path).read(), found)
    return found


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return _reference()["scaled_dot_product_attention"](Q, K, V, is_causal)
