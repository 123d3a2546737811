"""A memory cgroup per worker: memory counted wherever it lives, not only in the worker's address space.

The address-space limit (RLIMIT_AS) and the parent's resident-memory watchdog see only what a process
maps. Pages of files in tmpfs (the worker's /tmp and /dev/shm), of an unmapped memfd or of pipe
buffers live outside both; a memory cgroup charges them to the worker whatever holds them. Created
by the parent (it needs root), joined by the worker itself before it forks the process that runs
student code (a child stays where it was born), removed by the parent once the worker is gone.

cgroup v2 where the worker's own cgroup can delegate the memory controller; else the v1 memory
hierarchy (both charge shmem and tmpfs). Always beneath the grader's own cgroup, so whatever limit
an administrator set for the grader still holds. Where neither can be made (no root, a read-only
cgroup file system, a v2 cgroup that cannot delegate), `create` says why and the report lists
"memory cgroup" in `isolation_missing`.
"""
from __future__ import annotations

import itertools
import os
import time

CGROUP_ROOT = "/sys/fs/cgroup"
# Python, torch and the worker's own pages it writes to after the fork (copy-on-write) are charged
# too: the limit is the submission's memory on top of this.
OVERHEAD_BYTES = 512 << 20
_names = itertools.count()


def _own_cgroups() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own = {}
    with open("/proc/self/cgroup") as listed:
        for line in listed:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _write(path: str, value: str) -> None:
    with open(path, "w") as control:
        control.write(value)


def _v2_parent(own: dict[str, str]) -> str | None:
    """The grader's v2 cgroup, if it can give a child the memory controller."""
    if "" not in own:
        return None
    for mount in (CGROUP_ROOT, os.path.join(CGROUP_ROOT, "unified")):
        if os.path.exists(os.path.join(mount, "cgroup.subtree_control")):
            parent = os.path.join(mount, own[""].lstrip("/"))
            with open(os.path.join(parent, "cgroup.controllers")) as available:
                if "memory" not in available.read().split():
                    return None
            with open(os.path.join(parent, "cgroup.subtree_control")) as delegated:
                if "memory" not in delegated.read().split():
                    _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")  # EBUSY when it has processes
            return parent
    return None


def create(memory_bytes: int) -> tuple[str | None, str | None]:
    """(the new cgroup's folder, None) or (None, why there is none). Nothing is left behind on failure."""
    if os.geteuid() != 0:
        return None, "not root"
    limit = str(memory_bytes + OVERHEAD_BYTES)
    name = f"attention-kit-{os.getpid()}-{next(_names)}"
    try:
        own = _own_cgroups()
        parent = _v2_parent(own)
        if parent is not None:
            folder = os.path.join(parent, name)
            os.mkdir(folder)
            controls = [("memory.max", limit), ("memory.swap.max", "0")]
        elif "memory" in own:
            folder = os.path.join(CGROUP_ROOT, "memory", own["memory"].lstrip("/"), name)
            os.mkdir(folder)
            controls = [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]
        else:
            return None, "no memory controller"
    except OSError as error:
        return None, f"cannot create one: {error.strerror or error}"
    try:
        for control, value in controls:
            if os.path.exists(os.path.join(folder, control)):  # swap accounting may be off
                _write(os.path.join(folder, control), value)
    except OSError as error:
        remove(folder)
        return None, f"cannot limit it: {error.strerror or error}"
    return folder, None


def join(folder: str) -> None:
    """Move the calling process into the cgroup (in the worker, before it forks)."""
    _write(os.path.join(folder, "cgroup.procs"), str(os.getpid()))


def remove(folder: str) -> None:
    """Once its processes are gone (a killed one may take a moment to leave it)."""
    for _ in range(50):
        try:
            os.rmdir(folder)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
