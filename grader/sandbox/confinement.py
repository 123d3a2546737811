"""Confine the current process before it runs student code (runs inside the sandbox worker).

Layers, strongest available first; the worker reports which ones did not take effect:
- a session of its own with no controlling terminal, and no file descriptor but its pipe to the
  parent (0, 1 and 2 are /dev/null): nothing reaches the grader's terminal;
- private network, mount, PID, IPC and UTS namespaces. The forked worker unshares them and forks
  the process that runs student code, which is pid 1 there, sees only itself in a fresh /proc,
  takes every process of its namespace (and its System V segments) with it when it ends, and dies
  with its parent. Its root is a fresh tmpfs holding read-only binds of the system and the Python
  environment, a /dev with null, zero, full and urandom only, and a throwaway /tmp: the kit's repo,
  the submissions and home folders do not exist there;
- a drop to an unprivileged uid of its own (`worker_identity`), with no_new_privs;
- resource limits: address space (memory), process count, file size, open files, no core dumps;
  a memory cgroup (`memory_cgroup`) that also charges tmpfs, shared memory and pipe pages;
- a seccomp filter refusing what attention code never needs (`syscall_filter`).
As root (CI, an instructor's server) all layers apply. Without root, unprivileged user
namespaces give the namespace layers where the kernel allows them; the report lists the rest.

Each layer has a name (LAYERS). Only the sandbox's own tests switch layers off (`layers_off`, given by
the trusted parent before any student code exists), to show that each one holds on its own; a layer
switched off is listed in the report like any missing one.
"""
from __future__ import annotations

import ctypes
import glob
import os
import resource
import select
import signal
from dataclasses import dataclass, field

from grader.sandbox import memory_cgroup


CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
SYSTEM_PATHS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt/conda", "/sys"]
# What torch and Python read in /dev; /dev/shm (a small tmpfs) for torch's shared-memory tensors.
DEVICES = ["null", "zero", "full", "urandom"]
CUDA_DEVICES = "/dev/nvidia*"  # the driver's control, UVM and per-GPU nodes
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
NAMESPACES = {"net": CLONE_NEWNET, "pid": CLONE_NEWPID, "mount": CLONE_NEWNS, "ipc": CLONE_NEWIPC, "uts": CLONE_NEWUTS}
# "mount" is the private mount namespace and the new root; "read-only-binds" and "tmpfs-caps" live in that root.
LAYERS = (*NAMESPACES, "uid", "seccomp", "read-only-binds", "memory-cgroup", "rlimits", "process-count",
          "tmpfs-caps", "environment")
SCRATCH = "/tmp/work"
HOSTNAME = b"grading-sandbox"


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
    cgroup: str | None = None  # the memory cgroup the parent made for this worker (`memory_cgroup`)
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


def _silence_stdio() -> None:
    """Student prints must never reach the parent's stdout (JSON reports) or its terminal."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _detach_from_terminal(keep_fd: int) -> None:
    """A new session has no controlling terminal (/dev/tty fails); closing every inherited
    descriptor leaves no terminal, socket or file of the grader to write into or ioctl."""
    os.setsid()
    _silence_stdio()
    os.closerange(3, keep_fd)
    os.closerange(keep_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1])


def _unshare(libc, as_root: bool, namespaces: list[str]) -> None:
    flags = sum(NAMESPACES[name] for name in namespaces)
    if as_root:
        if flags and libc.unshare(flags) != 0:
            raise OSError(ctypes.get_errno(), f"unshare({', '.join(namespaces)})")
        return
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags | CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), f"unshare(user, {', '.join(namespaces)})")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def _mirror_exit(child: int, parent_alive_fd: int) -> None:
    """The forked worker's whole life after it started pid 1: wait for it and end the same way,
    so the fork server reports its exit status or signal (memory-limit, exited, crashed) as if
    it were the worker's own. Never returns."""
    os.closerange(0, parent_alive_fd)  # it holds nothing of the grader's, not even the pipe
    os.closerange(parent_alive_fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except ChildProcessError:
            os._exit(1)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # these two cannot be caught anyway
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.waitstatus_to_exitcode(status))


def _become_pid_one(libc) -> None:
    """Fork the process that runs student code: the first in the new PID namespace (pid 1), so
    its end takes everything in the namespace with it; it dies with its parent, which the
    grader kills on a timeout."""
    parent_alive, parent_alive_w = os.pipe()
    child = os.fork()
    if child:
        os.close(parent_alive)
        _mirror_exit(child, parent_alive_w)
    os.close(parent_alive_w)
    _die_with_parent(libc, parent_alive)


def _die_with_parent(libc, parent_alive: int) -> None:
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if select.select([parent_alive], [], [], 0)[0]:  # the parent died before prctl: readable = EOF
        os._exit(1)
    os.close(parent_alive)


def _bind(libc, source: str, target: str, writable: bool = False) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
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


def _minimal_dev(libc, root: str, cuda: bool, shm_options: str) -> None:
    """A tmpfs /dev with the host's harmless character devices bound in: no terminals, disks,
    kernel memory or console to open."""
    dev = root + "/dev"
    os.makedirs(dev)
    _mount(libc, "tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    nodes = [f"/dev/{name}" for name in DEVICES] + (sorted(glob.glob(CUDA_DEVICES)) if cuda else [])
    for node in nodes:
        _bind(libc, node, root + node, writable=True)
    os.makedirs(dev + "/shm")
    _mount(libc, "tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, shm_options)
    os.symlink("/proc/self/fd", dev + "/fd")


def _enter_new_root(libc, visible: list[str], cuda: bool, *, read_only: bool = True, capped: bool = True) -> None:
    """chroot into a fresh tmpfs that holds only the system, the interpreter and its packages.

    The kit's repo (graders, solutions, gradebook), other submissions and home folders simply do
    not exist there; /tmp is an empty throwaway tmpfs; /proc is this PID namespace's own. Mounts
    happen in our own mount namespace, so the host's folders are untouched.
    """
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    staging = _staging_point(visible)
    _mount(libc, "tmpfs", staging, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0755")
    root = os.path.join(staging, "root")
    os.makedirs(root + "/tmp")
    _mount(libc, "tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777" if capped else "mode=1777")
    for path in SYSTEM_PATHS + visible:  # after /tmp, so a venv under /tmp is bound on top of it
        if not os.path.lexists(path):
            continue
        target = root + path
        if os.path.islink(path):
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.symlink(os.readlink(path), target)
        elif os.path.isdir(path):
            _bind(libc, path, target, writable=not read_only)
    _minimal_dev(libc, root, cuda, "size=16m,mode=1777" if capped else "mode=1777")
    os.makedirs(root + "/proc")
    _mount(libc, "proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if libc.chroot(root.encode()) != 0:
        raise OSError(ctypes.get_errno(), "chroot")
    os.chdir("/")


def _resource_limits(limits: Limits, *, files: bool, address_space: bool, processes: bool) -> None:
    wanted = []
    if files:
        wanted += [("RLIMIT_FSIZE", limits.max_file_bytes), ("RLIMIT_NOFILE", limits.max_open_files), ("RLIMIT_CORE", 0)]
    if address_space:
        wanted.append(("RLIMIT_AS", _virtual_memory_bytes() + limits.memory_bytes))
    if processes:
        wanted.append(("RLIMIT_NPROC", limits.max_processes))
    for name, value in wanted:
        resource.setrlimit(getattr(resource, name), (value, value))


def confine(limits: Limits, *, keep_fd: int, cuda: bool = False, layers_off: frozenset[str] = frozenset()) -> list[str]:
    """Apply every layer that works here; return the list of what did not (empty = all).

    `keep_fd` is the pipe to the parent, the only descriptor left open. With the namespaces, the
    calling process forks here and only the child returns (the caller stays, invisible, to pass
    on the child's exit). `layers_off` (names from LAYERS) is for the sandbox's own tests only."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
    if not limits.confine:
        _silence_stdio()
        return ["all layers (disabled for a measurement)"]
    missing = [f"{layer} (switched off by the test suite)" for layer in LAYERS if layer in layers_off]
    on = {layer for layer in LAYERS if layer not in layers_off}
    libc = _libc()
    as_root = os.geteuid() == 0
    _detach_from_terminal(keep_fd)
    if limits.cgroup is not None:
        memory_cgroup.join(limits.cgroup)  # before the fork below: a child stays in its parent's cgroup
    try:
        _unshare(libc, as_root, [name for name in NAMESPACES if name in on])
        _become_pid_one(libc)
        if "uts" in on:  # without its own UTS namespace this would rename the host
            libc.sethostname(HOSTNAME, len(HOSTNAME))
        if "mount" in on:
            _enter_new_root(libc, limits.visible, cuda, read_only="read-only-binds" in on, capped="tmpfs-caps" in on)
    except OSError as error:
        missing.append(f"private network, filesystem, processes and IPC ({error})")
    os.makedirs(SCRATCH, exist_ok=True)
    own_uid = as_root and limits.uid is not None and "uid" in on
    if own_uid:
        os.chown(SCRATCH, limits.uid, limits.uid)
    os.chdir(SCRATCH)
    if own_uid:
        os.setgroups([])
        os.setgid(limits.uid)
        os.setuid(limits.uid)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a uid change clears it
    elif as_root and "uid" in on:
        missing.append("uid drop (no uid given)")
    elif not as_root:
        missing.append("uid drop (not root)")
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    # RLIMIT_AS breaks CUDA, which maps huge virtual ranges: there the parent watches RSS instead.
    # RLIMIT_NPROC counts every process of the uid, so it is only safe on a uid of our own.
    _resource_limits(limits, files="rlimits" in on, address_space=not cuda and "rlimits" in on,
                     processes=own_uid and "process-count" in on)
    if cuda:
        missing.append("address-space limit (CUDA: RSS watchdog instead)")
    if not own_uid and "process-count" in on:
        missing.append("process-count limit (needs a uid of its own)")
    if "environment" in on:
        os.environ.clear()
        os.environ.update({"PATH": "/usr/bin:/bin", "HOME": SCRATCH, "MPLCONFIGDIR": SCRATCH, "LANG": "C.UTF-8"})
    from grader.sandbox import syscall_filter  # loaded by the fork server: no cost here, none in the parent

    try:
        if "seccomp" in on:
            syscall_filter.install()
    except OSError as error:
        missing.append(f"system-call filter ({error})")
    return missing
