"""Unprivileged uids for sandbox workers that belong to no one on this host.

A worker's uid is what `RLIMIT_NPROC` counts and what owns its scratch files, so it must not be
a user's, a service's or another live worker's. The band 70000-73999 lies in what systemd's uid
ranges leave unused (65536-524287: above `nobody`, DynamicUser's 61184-65519 and homed's
60001-60513, below nspawn's containers), and below useradd's default subordinate uids (100000
and up, used by rootless containers). Each uid handed out is also checked against the user and
group databases (NSS: /etc/passwd, LDAP, ...), /etc/subuid, /etc/subgid and the uids and gids of
every live process. Killing never goes by uid: a worker is pid 1 of its own PID namespace, and
its end takes that namespace down.
"""
from __future__ import annotations

import grp
import itertools
import os
import pwd
import threading

BAND = range(70000, 74000)
SUBORDINATE_IDS = ("/etc/subuid", "/etc/subgid")  # uids and gids delegated to users' containers
_taken: set[int] = set()
_lock = threading.Lock()
_turn = itertools.count()
_share = (0, 1)  # (index, count): this process hands out only the uids of its share of the band


def take_share(index: int, count: int) -> None:
    """For one of `count` processes of one grading run (grade-all's job processes): this one hands out only every
    `count`-th uid of the band, from `index`, so two of them never pick the same uid before its worker runs as it
    (the live-process check below sees a uid only once a worker has taken it)."""
    global _share
    if not 0 <= index < count:
        raise ValueError(f"share {index} of {count}")
    _share = (index, count)


def _has_an_account(uid: int) -> bool:
    """Through NSS, so users and groups from LDAP or sssd count too, not only /etc/passwd's."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def _subordinate_ranges() -> list[range]:
    ranges = []
    for path in SUBORDINATE_IDS:
        try:
            with open(path, encoding="utf-8", errors="replace") as delegations:
                for line in delegations:
                    fields = line.strip().split(":")
                    if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                        ranges.append(range(int(fields[1]), int(fields[1]) + int(fields[2])))
        except OSError:
            pass
    return ranges


def _ids_of_live_processes() -> set[int]:
    ids = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as status:
                for line in status:
                    if line.startswith(("Uid:", "Gid:")):
                        ids.update(int(value) for value in line.split()[1:])
        except OSError:  # ended meanwhile
            pass
    return ids


def allocate() -> int:
    """A uid (also used as the gid) from the band that nothing on this host uses now."""
    with _lock:
        used = _taken | _ids_of_live_processes()
        delegated = _subordinate_ranges()
        start = (os.getpid() * 7 + next(_turn)) % len(BAND)  # apart from another grader's workers
        index, count = _share
        for offset in range(len(BAND)):
            uid = BAND[(start + offset) % len(BAND)]
            in_share = (uid - BAND.start) % count == index
            if in_share and uid not in used and not any(uid in band for band in delegated) and not _has_an_account(uid):
                _taken.add(uid)
                return uid
    raise OSError(f"no unused uid left in {BAND.start}-{BAND.stop - 1}")


def release(uid: int) -> None:
    with _lock:
        _taken.discard(uid)
