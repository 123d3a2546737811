"""A seccomp filter for the sandbox worker: refuse the system calls attention code never needs.

Built with libseccomp (through `pyseccomp`, a ctypes binding with the API of libseccomp's own
Python module), which knows each architecture's syscall numbers and compiles the BPF program.
A refused call fails with EPERM, so the student sees "Operation not permitted" (reported as
`tampering`), never a silent kill; calls from another architecture's ABI (int 0x80, x32) kill
the worker, which is reported as `tampering` too.
"""
from __future__ import annotations

import errno

try:  # imported in the fork server, once: loading libseccomp runs `ldconfig -p`
    import pyseccomp as seccomp
except (ImportError, OSError) as error:  # the module, or the libseccomp.so.2 it loads
    seccomp, unavailable = None, f"libseccomp not available: {error}"

# What could reach outside the worker or the kernel's privileged surface.
DENIED = [
    # other processes' memory and the kernel's key store
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key",
    # the filesystem layout and namespaces the worker was given
    "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "unshare", "setns",
    "open_by_handle_at", "name_to_handle_at",
    # System V IPC: segments outlive processes and are invisible to the memory limits
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl",
    # the kernel itself
    "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "iopl", "ioperm", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "vhangup", "fanotify_init", "lookup_dcookie",
    # memory no limit sees: an unmapped memfd's pages count toward neither the address space nor the
    # resident memory (the memory cgroup charges them, where there is one); secret memory is unswappable
    "memfd_create", "memfd_secret",
    # io_uring performs system calls the filter never sees
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # process creation and replacing the worker's program (threads stay allowed, see below)
    "fork", "vfork", "execve", "execveat",
]
# Terminal ioctls that type into, take over or reconfigure a terminal.
TERMINAL_IOCTLS = {
    "TCSETS": 0x5402, "TCSETSW": 0x5403, "TCSETSF": 0x5404, "TIOCSCTTY": 0x540E, "TIOCSPGRP": 0x5410,
    "TIOCSTI": 0x5412, "TIOCSWINSZ": 0x5414, "TIOCLINUX": 0x541C, "TIOCCONS": 0x541D, "TIOCSETD": 0x5423,
}
CLONE_THREAD = 0x00010000
# Address families that leave the worker's private network namespace: vsock reaches the hypervisor
# and other VMs' services whatever the namespace.
UNNAMESPACED_FAMILIES = {"AF_VSOCK": 40}


def _rules():
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            number = seccomp.resolve_syscall(seccomp.Arch.NATIVE, name)
        except (OSError, ValueError):
            continue
        if number >= 0:  # negative: not a system call on this architecture
            rules.add_rule(refuse, number)
    # ioctl's request is a 32-bit int: compare only those bits, or 1 << 32 | TIOCSTI gets through.
    for request in TERMINAL_IOCTLS.values():
        rules.add_rule(refuse, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    for family in UNNAMESPACED_FAMILIES.values():
        rules.add_rule(refuse, "socket", seccomp.Arg(0, seccomp.MASKED_EQ, 0xFFFFFFFF, family))
        rules.add_rule(refuse, "socketpair", seccomp.Arg(0, seccomp.MASKED_EQ, 0xFFFFFFFF, family))
    # Threads (clone with CLONE_THREAD) are how torch and Python work; a new process is not.
    rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    # clone3 passes its flags in memory, which seccomp cannot read: ENOSYS makes glibc use clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return rules


_RULES = _rules() if seccomp is not None else None  # built once in the fork server, loaded per worker


def install() -> None:
    """Load the filter into this process (and every thread it starts later). Raises OSError
    when libseccomp or seccomp itself is not available here."""
    if _RULES is None:
        raise OSError(errno.ENOSYS, unavailable)
    _RULES.load()
