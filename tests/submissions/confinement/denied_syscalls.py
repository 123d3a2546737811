# Calls, through libc, system calls that attention code never needs and that an unprivileged
# process may normally make; reports each one's errno (0 = it worked) in the exception message.
import ctypes
import os
import socket
import threading

libc = ctypes.CDLL(None, use_errno=True)
PTRACE_TRACEME, SYS_FORK, SYS_ADD_KEY, IPC_PRIVATE, AF_VSOCK = 0, 57, 248, 0, 40


def _errno_of(result):
    return 0 if result >= 0 else ctypes.get_errno()


def _fork_errno():
    pid = libc.syscall(SYS_FORK)
    if pid == 0:
        os._exit(0)  # the child of a fork that got through must leave at once
    return _errno_of(pid)


def _oserror_errno(call):
    try:
        os.close(call())
        return 0
    except OSError as error:
        return error.errno


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    results = {
        "ptrace": _errno_of(libc.ptrace(PTRACE_TRACEME, 0, None, None)),
        "shmget": _errno_of(libc.shmget(IPC_PRIVATE, 4096, 0o600)),
        "add_key": _errno_of(libc.syscall(SYS_ADD_KEY, b"user", b"k", b"v", 1, -2)),
        "fork": _fork_errno(),
        # memory outside every limit that reads a process (its pages need not be mapped)
        "memfd_create": _oserror_errno(lambda: os.memfd_create("hoard")),
        # a socket the network namespace does not cover (to the hypervisor)
        "vsock": _oserror_errno(lambda: socket.socket(AF_VSOCK, socket.SOCK_STREAM).detach()),
    }
    thread = threading.Thread(target=lambda: None)  # threads are how torch works: they must stay
    thread.start()
    thread.join()
    raise RuntimeError(f"errnos {results}, thread ran")
