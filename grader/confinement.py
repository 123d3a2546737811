"""Confine the current process before it runs student code (runs inside the sandbox worker).

Layers, strongest available first; the worker reports which ones did not take effect:
- a private network namespace (no network at all) and a private mount namespace whose root is a
  fresh tmpfs holding read-only binds of the system and the Python environment only: the kit's
  repo, the submissions and home folders do not exist there; /tmp is a throwaway tmpfs;
- a drop to an unprivileged uid of its own (a fresh uid per worker, so the process-count limit
  and the final kill-by-uid touch no one else), with no_new_privs;
- resource limits: address space (memory), process count, file size, open files, no core dumps.
As root (CI, an instructor's server) all layers apply. Without root, unprivileged user
namespaces give the network and mount layers where the kernel allows them; otherwise only the
resource limits apply, and the report says so.
"""
from __future__ import annotations

import ctypes
import os
import resource
from dataclasses import dataclass, field

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x20, 0x1000, 0x4000, 0x40000
SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt/conda", "/dev", "/proc", "/sys"]
PR_SET_NO_NEW_PRIVS = 38
SCRATCH = "/tmp/work"


@dataclass
class Limits:
    """What one worker may use. Times are enforced by the parent, the rest by the kernel."""

    memory_bytes: int = 3 << 30  # on top of what the worker already maps after importing torch
    max_processes: int = 64  # threads count too
    max_file_bytes: int = 16 << 20
    max_open_files: int = 256
    probe_seconds: float = 10.0
    submission_seconds: float = 60.0
    uid: int | None = None  # the unprivileged uid to become when root
    visible: list[str] = field(default_factory=list)  # besides the system: the interpreter and its packages
    confine: bool = True  # False only to measure what confinement costs (benchmarks/isolation_cost.py)


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")


def _virtual_memory_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _namespaces(libc, as_root: bool) -> None:
    flags = CLONE_NEWNS | CLONE_NEWNET
    if not as_root:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(flags | CLONE_NEWUSER) != 0:
            raise OSError(ctypes.get_errno(), "unshare(user, mount, net)")
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    elif libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare(mount, net)")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)


def _bind(libc, source: str, target: str, writable: bool = False) -> None:
    os.makedirs(target, exist_ok=True)
    _mount(libc, source, target, None, MS_BIND | MS_REC)
    if not writable:
        _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)


def _staging_point(visible: list[str]) -> str:
    """An existing folder to mount the new root's tmpfs on: one that holds nothing we must keep
    seeing (a venv may live under /tmp, e.g. in a CI checkout there)."""
    for candidate in ("/mnt", "/media", "/srv", "/var/tmp", "/tmp"):
        if os.path.isdir(candidate) and not any(p == candidate or p.startswith(candidate + "/") for p in visible):
            return candidate
    raise OSError(0, "no folder to stage a new root on")


def _enter_new_root(libc, visible: list[str]) -> None:
    """chroot into a fresh tmpfs that holds only the system, the interpreter and its packages.

    The kit's repo (graders, solutions, gradebook), other submissions and home folders simply do
    not exist there; /tmp is an empty throwaway tmpfs. Mounts happen in our own mount namespace,
    so the host's folders are untouched.
    """
    staging = _staging_point(visible)
    _mount(libc, "tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755")
    root = os.path.join(staging, "root")
    os.makedirs(root + "/tmp")
    _mount(libc, "tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    for path in SYSTEM_PATHS + visible:  # after /tmp, so a venv under /tmp is bound on top of it
        if not os.path.lexists(path):
            continue
        target = root + path
        if os.path.islink(path):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(os.readlink(path), target)
        elif os.path.isdir(path):
            _bind(libc, path, target, writable=path == "/dev")
    if os.path.isdir(root + "/dev/shm"):
        _mount(libc, "tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777")
    if libc.chroot(root.encode()) != 0:
        raise OSError(ctypes.get_errno(), "chroot")
    os.chdir("/")


def _resource_limits(limits: Limits, *, address_space: bool, processes: bool) -> None:
    wanted = [("RLIMIT_FSIZE", limits.max_file_bytes), ("RLIMIT_NOFILE", limits.max_open_files), ("RLIMIT_CORE", 0)]
    if address_space:
        wanted.append(("RLIMIT_AS", _virtual_memory_bytes() + limits.memory_bytes))
    if processes:
        wanted.append(("RLIMIT_NPROC", limits.max_processes))
    for name, value in wanted:
        resource.setrlimit(getattr(resource, name), (value, value))


def confine(limits: Limits, *, cuda: bool = False) -> list[str]:
    """Apply every layer that works here; return the list of what did not (empty = all)."""
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
    if not limits.confine:
        return ["all layers (disabled for a measurement)"]
    missing = []
    libc = _libc()
    as_root = os.geteuid() == 0
    try:
        _namespaces(libc, as_root)
        _enter_new_root(libc, limits.visible)
    except OSError as error:
        missing.append(f"private network and filesystem ({error})")
    os.makedirs(SCRATCH, exist_ok=True)
    if as_root and limits.uid is not None:
        os.chown(SCRATCH, limits.uid, limits.uid)
    os.chdir(SCRATCH)
    if as_root and limits.uid is not None:
        os.setgroups([])
        os.setgid(limits.uid)
        os.setuid(limits.uid)
    elif as_root:
        missing.append("uid drop (no uid given)")
    else:
        missing.append("uid drop (not root)")
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    # RLIMIT_AS breaks CUDA, which maps huge virtual ranges: there the parent watches RSS instead.
    # RLIMIT_NPROC counts every process of the uid, so it is only safe on a uid of our own.
    own_uid = as_root and limits.uid is not None
    _resource_limits(limits, address_space=not cuda, processes=own_uid)
    if cuda:
        missing.append("address-space limit (CUDA: RSS watchdog instead)")
    if not own_uid:
        missing.append("process-count limit (needs a uid of its own)")
    os.environ.clear()
    os.environ.update({"PATH": "/usr/bin:/bin", "HOME": SCRATCH, "MPLCONFIGDIR": SCRATCH, "LANG": "C.UTF-8"})
    return missing
