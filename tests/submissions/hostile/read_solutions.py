# expect: -
# affected: sdpa
# Borrows the reference solution from the instructor's repo instead of implementing: from the folder it
# runs in and those above it, through another process's working folder (/proc/PID/cwd), and from the
# places a repo usually lives. No recursive glob: each pattern answers at once, so a sandbox that lets
# it through shows up as full marks, never as a timeout.
import glob
import os

SOLUTION = "solutions/attention/attention.py"


def _candidates():
    here = os.getcwd()
    while True:
        yield os.path.join(here, SOLUTION)
        if here == os.path.dirname(here):
            break
        here = os.path.dirname(here)
    for folders in ("/proc/*/cwd", "/proc/*/cwd/..", "/*", "/*/*", "/*/*/*", "/tmp/*", "~/*"):
        yield os.path.join(os.path.expanduser(folders), SOLUTION)


def _reference():
    for pattern in _candidates():
        for path in sorted(glob.glob(pattern)):
            found = {}
            try:
                exec(open(path).read(), found)
            except (OSError, SyntaxError):
                continue
            if "scaled_dot_product_attention" in found:
                return found
    return {}


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return _reference()["scaled_dot_product_attention"](Q, K, V, is_causal)
