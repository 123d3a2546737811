# Looks at what a worker can see and touch beyond the system calls of denied_syscalls.py: the devices,
# the host name, a mount, a terminal ioctl, /tmp; reports it all in the exception message.
import ctypes
import fcntl
import os
import socket
import termios

libc = ctypes.CDLL(None, use_errno=True)


def _errno_of(result):
    return 0 if result >= 0 else ctypes.get_errno()


def _ioctl_errno():
    try:
        fcntl.ioctl(0, termios.TIOCSTI, b"x")
        return 0
    except OSError as error:
        return error.errno


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    seen = {
        "dev": sorted(os.listdir("/dev")),
        "host": socket.gethostname(),
        "mount": _errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        "tiocsti": _ioctl_errno(),
        "tmp": sorted(os.listdir("/tmp")),
    }
    raise RuntimeError(f"seen {seen}")
