# Reads the limit of its memory cgroup; then, with ARGUMENTS["hoard"] bytes, writes them into a memfd it
# never maps: memory no address-space limit or resident-memory watchdog sees.
import os


def _memory_cgroup_limit():
    """The limit of the worker's own memory cgroup (v1 or v2), or None."""
    with open("/proc/self/cgroup") as listed:
        for line in listed:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if not path.rsplit("/", 1)[-1].startswith("attention-kit-"):
                continue
            for control in ("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes", "/sys/fs/cgroup" + path + "/memory.max",
                            "/sys/fs/cgroup/unified" + path + "/memory.max"):
                if os.path.exists(control):
                    with open(control) as limit:
                        return int(limit.read())
    return None


seen = {"limit": _memory_cgroup_limit()}
if ARGUMENTS.get("hoard"):  # noqa: F821 (prepended by the test)
    hoard, block = os.memfd_create("hoard"), b"x" * (1 << 20)
    for _ in range(ARGUMENTS["hoard"] >> 20):  # noqa: F821
        os.write(hoard, block)
    seen["hoarded"] = os.fstat(hoard).st_size
raise RuntimeError("seen " + repr(seen))
