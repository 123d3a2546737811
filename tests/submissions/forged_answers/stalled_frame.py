# A worker that starts an answer and never finishes it: Part 1 writes only the 4-byte length
# header, Part 2 the long form (-1, then an 8-byte length) and a few body bytes, then both sleep.
import os
import stat
import struct
import time


def _answer_pipes():
    """The worker's end of its pipe to the grader: the only socket among its descriptors."""
    pipes = []
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                pipes.append(fd)
        except OSError:
            pass
    return pipes


def _stall(prefix):
    for fd in _answer_pipes():
        os.write(fd, prefix)
    time.sleep(10**6)


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    _stall(struct.pack("!i", 1000))


class MultiHeadAttention:
    def __init__(self, args, is_causal=False):
        _stall(struct.pack("!iQ", -1, 1000) + b"PK\x03\x04")
