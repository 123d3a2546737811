"""Does each isolation layer hold on its own, with every other layer switched off?

Each test runs one hostile file (tests/submissions/layers/) twice: with the layer under test alone (and only
what it stands on: the read-only binds and the tmpfs caps live in the worker's own root, the process
limit counts a uid of the worker's own), and without it, to show the same call does reach the host there.
The numbers the README promises (the memory cgroup's limit, the file, process and tmpfs caps) are written
out here, not read from the code, so changing one without the documentation fails.
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
from contextlib import contextmanager

import pytest

from support.paths import ROOT
from grader.grade import default_limits
from grader.sandbox.confinement import Limits
from grader.sandbox.worker_process import python_paths
from support.layer_tools import needs_root, run_with_only

pytestmark = pytest.mark.sandbox

SANDBOX_HOST_NAME = "grading-sandbox"
CLEAN_ENVIRONMENT = {"PATH": "/usr/bin:/bin", "HOME": "/tmp/work", "MPLCONFIGDIR": "/tmp/work", "LANG": "C.UTF-8"}
SYSTEM_FOLDERS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt/conda", "/sys"]
# README, *Isolation*: 3 GiB of memory by default, and the memory cgroup allows the limit + 512 MiB.
DEFAULT_MEMORY = 3 << 30
CGROUP_HEADROOM = 512 << 20
MAX_PROCESSES, MAX_FILE_BYTES, MAX_OPEN_FILES = 64, 16 << 20, 256
TMP_MIB, SHM_MIB = 64, 16


def _limits(**changed) -> Limits:
    return Limits(**{**default_limits().__dict__, "probe_seconds": 60.0, **changed})


@contextmanager
def _canary():
    """A host process for the worker to try to kill."""
    process = subprocess.Popen(["sleep", "300"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_the_network_namespace_alone_keeps_the_host_unreachable():
    needs_root()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert run_with_only("connect_to_the_host.py", set(), {"port": port}).seen == {"connect": "connected"}
        seen = run_with_only("connect_to_the_host.py", {"net"}, {"port": port}).seen
    assert seen["connect"] in ("ENETUNREACH", "ECONNREFUSED"), seen


def test_the_pid_namespace_alone_leaves_host_processes_out_of_reach():
    needs_root()
    with _canary() as canary:
        seen = run_with_only("kill_a_host_process.py", set(), {"canary": canary.pid}).seen
        assert seen["kill"] == "killed" and canary.wait(timeout=10) == -signal.SIGKILL
    with _canary() as canary:
        seen = run_with_only("kill_a_host_process.py", {"pid"}, {"canary": canary.pid}).seen
        assert seen == {"kill": "ESRCH", "pid": 1}, seen
        assert canary.poll() is None, "the host process was killed"


def test_the_new_root_alone_hides_the_repo_and_the_hosts_files(tmp_path):
    needs_root()
    secret = tmp_path / "secret.txt"
    secret.write_text("the gradebook password")
    paths = [str(secret), str(ROOT / "solutions" / "attention" / "attention.py")]
    seen = run_with_only("read_host_files.py", set(), {"paths": paths}).seen
    assert seen[paths[0]] == "the gradebook password" and "Reference solution" in seen[paths[1]], seen
    seen = run_with_only("read_host_files.py", {"mount"}, {"paths": paths}).seen
    assert seen == {path: "ENOENT" for path in paths}, seen


def test_the_new_roots_proc_stands_on_the_pid_namespace(tmp_path):
    """Its /proc shows the processes of the worker's PID namespace: without that namespace a host process's
    /proc/PID/root leads back to the host's files, so this route is closed by the two layers together."""
    needs_root()
    secret = tmp_path / "secret.txt"
    secret.write_text("the gradebook password")
    through_proc = f"/proc/{os.getpid()}/root{secret}"
    seen = run_with_only("read_host_files.py", {"mount"}, {"paths": [through_proc]}).seen
    assert seen == {through_proc: "the gradebook password"}, seen
    seen = run_with_only("read_host_files.py", {"mount", "pid"}, {"paths": [through_proc]}).seen
    assert seen == {through_proc: "ENOENT"}, seen


def test_the_ipc_namespace_alone_hides_the_hosts_message_queues():
    """A message queue rather than a shared-memory segment: another test counts the host's segments."""
    needs_root()
    libc = ctypes.CDLL(None, use_errno=True)
    key = 0x4C415945  # "LAYE"
    queue = libc.msgget(key, 0o1600)  # IPC_CREAT | 0600
    assert queue >= 0, os.strerror(ctypes.get_errno())
    try:
        assert run_with_only("find_a_host_message_queue.py", set(), {"key": key}).seen == {"msgget": "found"}
        assert run_with_only("find_a_host_message_queue.py", {"ipc"}, {"key": key}).seen == {"msgget": "ENOENT"}
    finally:
        libc.msgctl(queue, 0, None)  # IPC_RMID


def test_the_uts_namespace_alone_gives_the_worker_a_name_of_its_own():
    needs_root()
    host = socket.gethostname()
    assert host != SANDBOX_HOST_NAME
    assert run_with_only("host_name.py", set()).seen == {"host": host}
    assert run_with_only("host_name.py", {"uts"}).seen == {"host": SANDBOX_HOST_NAME}
    assert socket.gethostname() == host


def test_the_uid_drop_alone_takes_roots_powers_away(tmp_path):
    needs_root()
    secret = tmp_path / "root-only.txt"
    secret.write_text("root's secret")
    secret.chmod(0o600)
    with _canary() as canary:
        seen = run_with_only("act_as_root.py", set(), {"secret": str(secret), "canary": canary.pid}).seen
        assert seen == {"uid": 0, "read": "root's secret", "kill": "done"}, seen
    with _canary() as canary:
        seen = run_with_only("act_as_root.py", {"uid"}, {"secret": str(secret), "canary": canary.pid}).seen
        assert canary.poll() is None, "a root process was killed"
    assert seen["uid"] >= 70000 and seen["read"] == "EACCES" and seen["kill"] == "EPERM", seen


def test_the_read_only_binds_alone_refuse_a_write_to_every_bound_folder():
    """Root, with no uid drop and no filter in the way: only the bind's read-only flag can refuse."""
    needs_root()
    folders = [f for f in SYSTEM_FOLDERS + python_paths() if os.path.isdir(f) and not os.path.islink(f)]
    writable_on_the_host = [f for f in folders if not os.statvfs(f).f_flag & os.ST_RDONLY]
    assert "/usr" in writable_on_the_host, "this test needs folders the host itself lets root write to"
    seen = run_with_only("write_bound_paths.py", {"mount", "read-only-binds"}, {"paths": folders}).seen
    assert seen == {folder: "EROFS" for folder in folders}, {f: e for f, e in seen.items() if e != "EROFS"}


def test_the_memory_cgroup_alone_gives_a_hand_in_its_limit_and_512_mib_more():
    needs_root()
    seen = run_with_only("hoard_memory.py", {"memory-cgroup"}).seen
    assert seen == {"limit": DEFAULT_MEMORY + CGROUP_HEADROOM}, seen  # 3.5 GiB: README, *Isolation*


def test_the_memory_cgroup_alone_stops_memory_no_other_limit_sees():
    needs_root()
    small, hoard = 64 << 20, 1 << 30  # 1 GiB in an unmapped memfd: past 64 MiB + the headroom, within this machine
    seen = run_with_only("hoard_memory.py", set(), {"hoard": hoard}, _limits(memory_bytes=small)).seen
    assert seen == {"limit": None, "hoarded": hoard}, seen
    outcome = run_with_only("hoard_memory.py", {"memory-cgroup"}, {"hoard": hoard}, _limits(memory_bytes=small))
    assert outcome.seen is None and outcome.failure is not None and outcome.failure.kind == "memory-limit", outcome


def test_the_resource_limits_alone_cap_memory_file_size_and_open_files():
    needs_root()
    memory, mapping = 256 << 20, 1 << 30
    seen = run_with_only("exceed_resource_limits.py", set(), {"map": mapping}, _limits(memory_bytes=memory)).seen
    assert seen["map"] == "mapped" and seen["file"] == (32 << 20, "none") and seen["files"] == (1000, "none"), seen
    seen = run_with_only("exceed_resource_limits.py", {"rlimits"}, {"map": mapping}, _limits(memory_bytes=memory)).seen
    assert seen["map"] == "ENOMEM", seen
    assert seen["file"] == (MAX_FILE_BYTES, "EFBIG"), seen
    assert seen["files"][0] < MAX_OPEN_FILES and seen["files"][1] == "EMFILE", seen
    assert seen["limits"]["Max open files"] == [str(MAX_OPEN_FILES)] * 2, seen["limits"]
    assert seen["limits"]["Max file size"] == [str(MAX_FILE_BYTES)] * 2, seen["limits"]
    assert seen["limits"]["Max core file size"] == ["0", "0"], seen["limits"]


def test_the_process_limit_alone_stops_a_bomb_at_64():
    """It counts the processes of the worker's own uid, so it stands on the uid drop."""
    needs_root()
    seen = run_with_only("start_many_threads.py", {"uid"}).seen
    assert seen["threads"] == 200, seen
    seen = run_with_only("start_many_threads.py", {"uid", "process-count"}).seen
    assert seen["limit"] == [str(MAX_PROCESSES)] * 2, seen
    assert MAX_PROCESSES - 8 < seen["threads"] < MAX_PROCESSES and "can't start new thread" in seen["stopped by"], seen


def test_the_tmpfs_caps_alone_stop_files_that_are_memory():
    """/tmp and /dev/shm exist in the worker's own root, so they stand on it; no rlimit, no cgroup."""
    needs_root()
    seen = run_with_only("fill_tmpfs.py", {"mount"}).seen
    assert seen["/tmp"][:2] == (96, "none") and seen["/dev/shm"][:2] == (48, "none"), seen
    seen = run_with_only("fill_tmpfs.py", {"mount", "tmpfs-caps"}).seen
    assert seen == {"/tmp": (TMP_MIB, "ENOSPC", TMP_MIB), "/dev/shm": (SHM_MIB, "ENOSPC", SHM_MIB)}, seen


def test_the_clean_environment_alone_shows_nothing_of_the_grading_process():
    needs_root()
    inherited = run_with_only("read_the_environment.py", set()).seen["environment"]
    assert inherited != CLEAN_ENVIRONMENT, "the control must see what the grader was started with"
    assert run_with_only("read_the_environment.py", {"environment"}).seen == {"environment": CLEAN_ENVIRONMENT}


def test_no_grading_outside_the_test_suite_can_switch_a_layer_off():
    """The switch is an argument only these tests pass; a process without pytest loaded refuses it before any
    worker starts, and a misspelt layer (which would silently stay on) is refused everywhere."""
    attempt = ("import sys; from grader.grade import default_limits; from grader.sandbox.worker_process import Worker; "
               "Worker('', default_limits(), False, layers_off=frozenset(sys.argv[1:])); print('started')")
    refused = subprocess.run([sys.executable, "-c", attempt, "net"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "started" not in refused.stdout and refused.returncode != 0, refused.stdout
    assert "isolation layers can be switched off only by the sandbox's own tests" in refused.stderr, refused.stderr[-2000:]
    misspelt = subprocess.run([sys.executable, "-c", attempt, "network"], cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
    assert "no such isolation layer: ['network']" in misspelt.stderr, misspelt.stderr[-2000:]
