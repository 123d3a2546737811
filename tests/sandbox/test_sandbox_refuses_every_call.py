"""Does the system-call filter alone refuse every call it exists to refuse, each with its errno?

One worker with every other isolation layer off (root, host namespaces, no rlimits) makes each refused
call once (tests/submissions/layers/refused_calls.py). The expected list is written out here: deleting a
rule from grader/sandbox/syscall_filter.py, or letting a call through, turns this red. The same file with
the filter off shows each call reaches the kernel and fails there differently, so EPERM here is the filter's.
"""
import os

import pytest

from support.layer_tools import needs_root, run_with_only

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.uname().machine != "x86_64", reason="the calls are made by their x86_64 numbers")]

REFUSED_WITH_EPERM = [
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "keyctl", "add_key", "request_key",
    "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semtimedop",
    "semctl", "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "iopl", "ioperm",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup",
    "fanotify_init", "lookup_dcookie", "memfd_create", "memfd_secret", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "fork", "vfork", "execve", "execveat",
    "clone without CLONE_THREAD",
    "socket AF_VSOCK", "socket AF_VSOCK (high bits set)", "socketpair AF_VSOCK",
    "ioctl TCSETS", "ioctl TCSETSW", "ioctl TCSETSF", "ioctl TIOCSCTTY", "ioctl TIOCSPGRP", "ioctl TIOCSTI",
    "ioctl TIOCSWINSZ", "ioctl TIOCLINUX", "ioctl TIOCCONS", "ioctl TIOCSETD", "ioctl TIOCSTI (high bits set)",
]
# clone3 passes its flags in memory the filter cannot read: "not implemented" sends glibc back to clone.
REFUSED_WITH_ENOSYS = ["clone3"]


def test_the_filter_alone_refuses_every_call_on_its_list():
    needs_root()
    seen = run_with_only("refused_calls.py", {"seccomp"}, {"vfork": True}).seen
    expected = {**{name: "EPERM" for name in REFUSED_WITH_EPERM}, **{name: "ENOSYS" for name in REFUSED_WITH_ENOSYS}}
    assert seen["refused"] == expected, {n: e for n, e in seen["refused"].items() if expected.get(n) != e}
    assert seen["thread ran"]


def test_without_the_filter_each_call_fails_otherwise_or_goes_through():
    """The positive control: as root with nothing else in the way, no call fails with the filter's errno, so a
    deleted rule cannot hide behind the kernel's own refusal."""
    needs_root()
    seen = run_with_only("refused_calls.py", set(), {"vfork": False}).seen
    assert set(seen["refused"]) == set(REFUSED_WITH_EPERM + REFUSED_WITH_ENOSYS) - {"vfork"}
    same = {name: code for name, code in seen["refused"].items()
            if code == ("ENOSYS" if name in REFUSED_WITH_ENOSYS else "EPERM")}
    assert not same, f"the kernel itself refuses these here, so the filter's test cannot tell: {same}"
    assert seen["refused"]["fork"] == "went through"


def test_every_call_the_filter_names_is_tried_here():
    """A rule added to the filter is added to this test too (the list above is what the filter must refuse)."""
    pytest.importorskip("pyseccomp")
    from grader.sandbox.syscall_filter import DENIED

    tried = {name.split()[0] for name in REFUSED_WITH_EPERM + REFUSED_WITH_ENOSYS}
    assert set(DENIED) <= tried, set(DENIED) - tried
