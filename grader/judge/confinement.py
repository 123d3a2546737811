"""The judge's confinement: the worker's (grader.sandbox.confinement) and what a process that only runs graphs
can lose besides.

A graph never needs a socket or more than seconds of CPU. The worker's layers give the judge its namespaces
(no network where the kernel allows them, no files of the kit's: an empty root of the system and the Python
environment, read-only, and an empty scratch folder as its working folder), its own uid, no descriptor but its
pipe, an address-space limit and the worker's system-call filter. On top of those:
- `cpu-time`: RLIMIT_CPU, so a graph that keeps the judge computing inside one node, where the runner cannot
  read the budget, is ended by the kernel (SIGXCPU at the soft limit, SIGKILL a second later);
- `no-sockets`: a second seccomp filter refusing every socket call, so the judge reaches no network even where
  the kernel gives it no network namespace (no root, no user namespaces).
"""
from __future__ import annotations

import errno
import resource
import sys

from grader.sandbox import syscall_filter

JUDGE_LAYERS = ("cpu-time", "no-sockets")
CPU_MARGIN_SECONDS = 2
"""RLIMIT_CPU sits this far above the grading's CPU budget, which the runner reads between nodes: a graph over the
budget is told so first; one that spends the margin inside a single node is ended by the kernel."""
SOCKET_CALLS = ["socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"]


def check_layers_off(layers_off: frozenset[str]) -> None:
    """As for the worker's layers: a misspelt name would leave a layer on; outside the test suite none is off."""
    unknown = set(layers_off) - set(JUDGE_LAYERS)
    if unknown:
        raise ValueError(f"no such judge layer: {sorted(unknown)} (known: {', '.join(JUDGE_LAYERS)})")
    if layers_off and "pytest" not in sys.modules:
        raise PermissionError("the judge's layers can be switched off only by its own tests")


def _refuse_sockets() -> None:
    seccomp = syscall_filter.seccomp
    if seccomp is None:
        raise OSError(errno.ENOSYS, "libseccomp not available")
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in SOCKET_CALLS:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):  # not a system call of this architecture (socketcall's)
            continue
    rules.load()  # stacked on the worker's filter: both apply


def confine_judge(cpu_seconds: float, layers_off: frozenset[str] = frozenset()) -> list[str]:
    """Apply the judge's own layers (after `confinement.confine`); the list of what did not take effect."""
    check_layers_off(layers_off)
    missing = [f"judge {layer} (switched off by the test suite)" for layer in JUDGE_LAYERS if layer in layers_off]
    if "cpu-time" not in layers_off:
        seconds = max(1, int(cpu_seconds)) + CPU_MARGIN_SECONDS
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    if "no-sockets" not in layers_off:
        try:
            _refuse_sockets()
        except OSError as error:
            missing.append(f"judge socket filter ({error})")
    return missing
