"""Can student code reach the grader's terminal, other processes, other students or host users?

Each test runs a hostile submission (tests/submissions/confinement/) through the real grader, as
root (as CI runs it), and checks the outcome on the host, not just the score.
"""
import ast
import errno
import json
import os
import select
import socket
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from support.capabilities import needs_root
from support.for_other_users import copied_for_other_users
from support.paths import REFERENCE, ROOT, SUBMISSIONS
from support.rules_off import BYPASS_RULES, GRADER_WITHOUT_RULES
from grader.exercises.attention import MAX_SCORE
from grader.grade import grade_submission
from grader.sandbox import worker_identity
from grader.sandbox.worker_process import python_paths

HOSTILE = SUBMISSIONS / "confinement"
pytestmark = [pytest.mark.sandbox, needs_root("the full isolation layers need root (CI runs as root)"),
              pytest.mark.usefixtures("rules_bypassed")]  # the sandbox on its own, as if a trick got past the rules

# Appended to the reference solution: a correct submission that also stores every Part 1 answer in
# System V shared memory for a later student (shm_replay.py), and leaves 4 x 64 MiB segments behind.
SHM_STORE = '''
import ctypes as _ctypes, hashlib as _hashlib, pickle as _pickle

_KEY, _SIZE, _CREATE = 0x41545431, 64 << 20, 0o1666
_correct = scaled_dot_product_attention


def _libc():  # set up inside a function: the grader runs only definitions, not top-level statements
    libc = _ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = _ctypes.c_void_p
    libc.shmat.argtypes = [_ctypes.c_int, _ctypes.c_void_p, _ctypes.c_int]
    return libc


def _digest(*values):
    parts = [repr(v).encode() if not torch.is_tensor(v) else repr(tuple(v.shape)).encode() + v.detach().cpu().numpy().tobytes()
             for v in values]
    return _hashlib.sha256(b"|".join(parts)).hexdigest()


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    out, weights = _correct(Q, K, V, is_causal)
    try:
        libc = _libc()
        for _ in range(4):
            libc.shmget(0, _SIZE, _CREATE)  # IPC_PRIVATE: created, never attached, never removed
        key = _digest(Q, K, V, is_causal)
        address = libc.shmat(libc.shmget(_KEY, _SIZE, _CREATE), None, 0)
        if address not in (None, _ctypes.c_void_p(-1).value):
            memory = (_ctypes.c_char * _SIZE).from_address(address)
            length = int.from_bytes(memory[:8], "little")
            answers = _pickle.loads(memory[8:8 + length]) if length else {}
            answers[key] = (out.tolist(), weights.tolist())
            data = _pickle.dumps(answers)
            memory[:8 + len(data)] = len(data).to_bytes(8, "little") + data
            libc.shmdt(_ctypes.c_void_p(address))
    except Exception:
        pass
    return out, weights
'''


def _sdpa_messages(report: dict) -> str:
    return "\n".join(c["message_en"] for c in report["checks"] if c["part"] == "sdpa")


def _shared_memory_segments() -> set[str]:
    with open("/proc/sysvipc/shm") as table:
        return {" ".join(line.split()[:2]) for line in table.readlines()[1:]}


def _run_under_a_pty(command: list[str], uid: int | None = None, **popen) -> tuple[int, bytes]:
    """Run `command` with a new pty as its controlling terminal and stdio, as a shell would;
    return its exit status and the input still queued on the terminal afterwards (what the
    shell would read and run next)."""
    master, slave = os.openpty()
    name = os.ttyname(slave)

    def take_the_terminal():  # in the child, after setsid: the first tty opened becomes its controlling one
        os.close(os.open(name, os.O_RDWR))
        if uid is not None:
            os.setgid(uid)
            os.setuid(uid)

    process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                               preexec_fn=take_the_terminal, **popen)
    while process.poll() is None:  # keep the pty's output side drained
        if select.select([master], [], [], 0.2)[0]:
            try:
                os.read(master, 65536)
            except OSError:
                break
    status = process.wait(timeout=300)
    attributes = termios.tcgetattr(slave)
    attributes[3] &= ~termios.ICANON  # make a half-typed line readable too
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    os.set_blocking(slave, False)
    queued = b""
    try:
        while chunk := os.read(slave, 65536):
            queued += chunk
    except BlockingIOError:
        pass
    os.close(slave)
    os.close(master)
    return status, queued


def test_nothing_is_typed_into_the_terminal_that_runs_the_grader():
    hostile = HOSTILE / "type_into_terminal.py"
    injected = b"touch /tmp/attention-kit-typed-by-student"
    # Positive control: the same file run as a plain unprivileged process on such a terminal does
    # type (the system's Python: the venv's may sit in root's home, out of that uid's reach; and a copy of the
    # file, which that uid may read wherever the clone lives).
    with copied_for_other_users(hostile) as copy:
        plain = str(hostile.relative_to(ROOT))
        status, queued = _run_under_a_pty(["/usr/bin/python3", plain], uid=70999, cwd=copy)
    assert status == 0 and injected in queued, ("the pty check must see a real injection", queued)

    status, queued = _run_under_a_pty([*GRADER_WITHOUT_RULES, "grade", str(hostile), "--lang", "en"], cwd=ROOT)
    assert status == 0
    assert queued == b"", f"the grader's terminal received input: {queued!r}"
    assert not Path("/tmp/attention-kit-typed-by-student").exists()


def test_no_other_process_is_visible():
    canary = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                               "--db-url=postgresql://grader:password=canary-s3cret@db/gradebook"])
    try:
        report = grade_submission(HOSTILE / "list_processes.py")
    finally:
        canary.kill()
        canary.wait()
    messages = _sdpa_messages(report)
    assert "1 processes [1], secrets []" in messages, messages
    assert "canary-s3cret" not in json.dumps(report)


def test_no_shared_memory_survives_and_nothing_is_replayed_across_submissions(tmp_path):
    (tmp_path / "a-store.py").write_text(REFERENCE.read_text() + SHM_STORE)
    (tmp_path / "b-replay.py").write_bytes((HOSTILE / "shm_replay.py").read_bytes())
    before = _shared_memory_segments()
    out = tmp_path / "reports.json"
    result = subprocess.run([*GRADER_WITHOUT_RULES, "grade-all", str(tmp_path), "--jobs", "1", "--json", str(out),
                             "--lang", "en"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = {r["student"]: r for r in json.loads(out.read_text())}
    empty = grade_submission(SUBMISSIONS / "hostile" / "empty.py")
    assert reports["a-store"]["score"] == MAX_SCORE
    assert reports["b-replay"]["score"] == empty["score"], _sdpa_messages(reports["b-replay"])
    assert _shared_memory_segments() == before, "a segment outlived its worker"


def test_a_host_process_with_a_uid_near_the_worker_range_survives_a_class_run(tmp_path):
    """The grading process waits until this test has started `sleep`s as exactly the uids its
    workers would get from its pid under the old scheme (61000 + (pid*7 + n) % 4000, killed by
    uid at the end) and under the current band's first choices; none may be killed."""
    (tmp_path / "fork-bomb.py").write_bytes((SUBMISSIONS / "hostile" / "fork_bomb.py").read_bytes())
    (tmp_path / "honest.py").write_bytes(REFERENCE.read_bytes())
    out = tmp_path / "reports.json"
    grading = subprocess.Popen(
        [sys.executable, "-c", f"{BYPASS_RULES}; import os, runpy, sys; print(os.getpid(), flush=True); sys.stdin.readline(); "
         "runpy.run_module('grader', run_name='__main__')",
         "grade-all", str(tmp_path), "--jobs", "1", "--json", str(out)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(grading.stdout.readline())
    uids = {base + (pid * 7 + n) % 4000 for base in (61000, 70000) for n in range(4)}
    neighbours = [subprocess.Popen(["sleep", "300"], user=uid, group=uid) for uid in sorted(uids)]
    try:
        grading.stdin.write("go\n")
        grading.stdin.flush()
        assert grading.wait(timeout=600) == 0
        time.sleep(0.5)
        survivors = [p.args for p in neighbours if p.poll() is None]
        assert len(survivors) == len(neighbours), [(p.pid, p.returncode) for p in neighbours]
    finally:
        for neighbour in neighbours:
            neighbour.kill()
            neighbour.wait()
    reports = {r["student"]: r for r in json.loads(out.read_text())}
    assert reports["honest"]["score"] == MAX_SCORE and "tampering" in reports["fork-bomb"]["mistakes"]


def test_system_calls_attention_code_never_needs_are_refused():
    report = grade_submission(HOSTILE / "denied_syscalls.py")
    messages = _sdpa_messages(report)
    assert "errnos {'ptrace': 1, 'shmget': 1, 'add_key': 1, 'fork': 1, 'memfd_create': 1, 'vsock': 1}, thread ran" in messages, messages


def test_every_denied_system_call_is_known_here():
    """A misspelt name would be skipped silently as "not on this architecture"."""
    seccomp = pytest.importorskip("pyseccomp")
    from grader.sandbox.syscall_filter import DENIED

    if os.uname().machine == "x86_64":
        unknown = [name for name in DENIED if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0]
        assert not unknown


def test_a_crash_of_the_worker_is_reported_with_its_signal():
    report = grade_submission(HOSTILE / "segfault.py")
    assert "crashed: the worker died (signal 11)" in _sdpa_messages(report)
    assert "tampering" in report["mistakes"]


def test_a_worker_uid_is_never_one_a_live_process_has(monkeypatch):
    from grader.sandbox import worker_identity

    monkeypatch.setattr(worker_identity, "BAND", range(70500, 70503))
    squatters = [subprocess.Popen(["sleep", "60"], user=uid, group=uid) for uid in (70500, 70501)]
    try:
        time.sleep(0.2)
        uid = worker_identity.allocate()
        assert uid == 70502
        with pytest.raises(OSError, match="no unused uid"):
            worker_identity.allocate()
        worker_identity.release(uid)
    finally:
        for squatter in squatters:
            squatter.kill()
            squatter.wait()


def test_the_worker_sees_a_minimal_dev_its_own_host_name_and_cannot_mount_or_type():
    report = grade_submission(HOSTILE / "look_around.py")
    messages = _sdpa_messages(report)
    seen = ast.literal_eval(messages[messages.index("seen {") + len("seen "):].split("\n", 1)[0])
    assert seen["dev"] == ["fd", "full", "null", "shm", "urandom", "zero"], seen
    assert seen["host"] == "grading-sandbox" and seen["host"] != socket.gethostname()
    assert seen["mount"] == errno.EPERM and seen["tiocsti"] == errno.EPERM, seen  # refused, not merely failed
    # its own throwaway /tmp: the host's is not there, only the way to a Python installation that lives under it
    # (a checkout in /tmp with its .venv)
    bound = {Path(p).relative_to("/tmp").parts[0] for p in python_paths() if p.startswith("/tmp/")}
    assert set(seen["tmp"]) == {"work"} | bound, (seen, bound)
    assert seen["uid"] in worker_identity.BAND and seen["gid"] == seen["uid"], seen  # never root, never a user's
    assert seen["tmpfs_mib"] == {"/tmp": 64, "/dev/shm": 16}, seen  # files there are memory: capped
    # README's figures, as literals: the 3 GiB memory limit plus the cgroup's 512 MiB of headroom
    assert seen["memory_cgroup_limit"] == (3 << 30) + (512 << 20), seen


def test_a_worker_uid_is_never_an_accounts_nor_delegated_to_containers(monkeypatch, tmp_path):
    """Users and groups from any NSS source (here a stand-in for LDAP) and /etc/subuid, /etc/subgid ranges."""
    import pwd

    from grader.sandbox import worker_identity

    monkeypatch.setattr(worker_identity, "BAND", range(70600, 70606))
    directory_user, real_getpwuid = 70600, pwd.getpwuid

    def getpwuid(uid):
        if uid == directory_user:
            return ("ldap-user", "x", uid, uid, "", "/home/ldap-user", "/bin/sh")
        return real_getpwuid(uid)

    monkeypatch.setattr(worker_identity.pwd, "getpwuid", getpwuid)
    (tmp_path / "subuid").write_text("alice:70601:2\n")
    (tmp_path / "subgid").write_text("bob:70603:2\nmalformed line\n")
    monkeypatch.setattr(worker_identity, "SUBORDINATE_IDS", (str(tmp_path / "subuid"), str(tmp_path / "subgid")))
    uid = worker_identity.allocate()
    try:
        assert uid == 70605, uid
        with pytest.raises(OSError, match="no unused uid"):
            worker_identity.allocate()
    finally:
        worker_identity.release(uid)
