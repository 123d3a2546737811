# Looks at what a worker can see and touch beyond the system calls of denied_syscalls.py: the devices,
# the host name, a mount, a terminal ioctl, /tmp, who it runs as, how much its tmpfs folders hold and
# the memory cgroup it is in; reports it all in the exception message.
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


def _tmpfs_mib(path):
    stats = os.statvfs(path)
    return stats.f_blocks * stats.f_frsize >> 20


def _memory_cgroup_limit():
    """The limit of the memory cgroup this process is in (v1 or v2), or None."""
    with open("/proc/self/cgroup") as listed:
        for line in listed:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            candidates = {"memory": ["/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"],
                          "": ["/sys/fs/cgroup" + path + "/memory.max", "/sys/fs/cgroup/unified" + path + "/memory.max"]}
            for control in candidates.get("memory" if "memory" in controllers.split(",") else controllers, []):
                try:
                    with open(control) as limit:
                        value = limit.read().strip()
                except OSError:
                    continue
                if value not in ("max", str(2 ** 63 - 4096)) and path.rsplit("/", 1)[-1].startswith("attention-kit-"):
                    return int(value)
    return None


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    seen = {
        "dev": sorted(os.listdir("/dev")),
        "host": socket.gethostname(),
        "mount": _errno_of(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        "tiocsti": _ioctl_errno(),
        "tmp": sorted(os.listdir("/tmp")),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "tmpfs_mib": {path: _tmpfs_mib(path) for path in ("/tmp", "/dev/shm")},
        "memory_cgroup_limit": _memory_cgroup_limit(),
    }
    raise RuntimeError(f"seen {seen}")
