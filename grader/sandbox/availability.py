"""Can the sandbox start on this machine at all? Asked once by every entry point that grades, before it
reads or grades anything, so that a machine without it stops with one line instead of scoring a class 0.

What is asked is only what a worker cannot start without: Linux (namespaces, seccomp, `/proc`), `fork`
and the multiprocessing fork server, and pidfds (the parent ends a worker's whole namespace through one).
A machine that has these but refuses some layer (no unprivileged user namespaces, AppArmor's restriction
on Ubuntu 23.10+, a container's seccomp profile) still grades: the worker lists what is missing in the
report's `isolation_missing` (docs/isolation.md). Imports nothing the sandbox needs, so that it also
answers on Windows, where the sandbox's own modules do not import.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys

WHERE_IT_RUNS = "docs/instructors/where-grading-runs.md"


def problem() -> str | None:
    """Why no sandbox worker can start here, in a few words; None where one can."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux and this machine runs {sys.platform}"
    if not hasattr(os, "fork") or "forkserver" not in multiprocessing.get_all_start_methods():
        return "this Python cannot fork a worker from a fork server"
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        return "this Python or kernel has no pidfds (Linux 5.3 and Python 3.9 or newer are needed)"
    return None


def refusal(reason: str) -> str:
    """The one line an entry point prints: what is wrong, that no student lost anything, what to do."""
    return (f"the sandbox cannot run here ({reason}): nothing was graded and no score was written; "
            f"grade on Linux as root (sudo), in a Linux VM, or on Gradescope ({WHERE_IT_RUNS})")
