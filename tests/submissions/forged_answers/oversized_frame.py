# A worker that declares an answer larger than the parent reads (40 MiB, over the 16 MiB cap) and sends
# only a few bytes of it: a frame that lies about its own size, which no honest worker writes.
import os
import stat
import struct
import time


def _answer_pipes():
    """The worker's end of its pipe to the grader: the only socket among its descriptors."""
    return [fd for fd in range(3, 1024) if _is_socket(fd)]


def _is_socket(fd):
    try:
        return stat.S_ISSOCK(os.fstat(fd).st_mode)
    except OSError:
        return False


def _declare_too_much():
    for fd in _answer_pipes():
        os.write(fd, struct.pack("!i", 40 << 20) + b"PK\x03\x04")
    time.sleep(10**6)


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    _declare_too_much()


class MultiHeadAttention:
    def __init__(self, args, is_causal=False):
        _declare_too_much()
