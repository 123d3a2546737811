# Crashes the process that runs it (a read at address 0): the grader must say it crashed, with
# the signal, although that process is pid 1 of a namespace whose parent only passes its end on.
import ctypes


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return ctypes.string_at(0)
