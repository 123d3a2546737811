"""Finding an instructor's secret from outside a grading: canaries to plant, and every readable byte of a
process's memory searched for them (/proc/PID/mem over /proc/PID/maps, as root)."""
import os
import re
import uuid

from support.paths import SUBMISSIONS

HOSTILE = SUBMISSIONS / "confinement" / "quote_secrets.py"
"""The submission that searches its own memory for a canary and quotes what it finds."""
SECRET = re.compile(rb"s3cret-[0-9a-f]{32}")
CHUNK = 1 << 20


def canary() -> str:
    return f"s3cret-{uuid.uuid4().hex}"


def children(pid: int) -> list[int]:
    found = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
    except OSError:
        pass
    return found


def descendants(pid: int) -> list[int]:
    tree = children(pid)
    for member in tree:
        tree.extend(children(member))
    return tree


def fork_servers(pid: int) -> list[int]:
    servers = []
    for child in children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as cmdline:
                if b"multiprocessing.forkserver" in cmdline.read():
                    servers.append(child)
        except OSError:
            pass
    return servers


def secrets_in_memory(pid: int) -> set[bytes] | None:
    """Every readable mapping of the process, read in chunks (a chunk's tail overlaps the next); None
    when it ended before it could be read (a worker of another part, say)."""
    found = set()
    try:
        maps, memory = open(f"/proc/{pid}/maps"), open(f"/proc/{pid}/mem", "rb", 0)
    except FileNotFoundError:
        return None
    with maps, memory:
        for line in maps:
            span, permissions = line.split()[:2]
            if not permissions.startswith("r"):
                continue
            start, end = (int(address, 16) for address in span.split("-"))
            for offset in range(start, end, CHUNK):
                try:
                    memory.seek(offset)
                    found.update(SECRET.findall(memory.read(min(CHUNK + 64, end - offset))))
                except (OSError, OverflowError, ValueError):
                    break
    return found


def waiting_worker(pid: int) -> int | None:
    """The worker process whose submission waits for the scan (its `ready` file, seen from the host)."""
    for member in descendants(pid):
        if os.path.exists(f"/proc/{member}/root/tmp/work/ready"):
            return member
    return None
