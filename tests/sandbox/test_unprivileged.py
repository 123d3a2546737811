"""Does grading as an ordinary user (a laptop, a university server, JupyterHub) hold what docs/isolation.md promises?

Without root the worker confines itself in user namespaces: private network, mount, PID, IPC and UTS
namespaces, its own root and /tmp, the seccomp filter, the address-space limit; what needs root (a
uid of its own, the process-count limit that needs one, a memory cgroup) is named in
`isolation_missing`, exactly. The suite runs as root (CI), so this test grades a handful of
representative hostile files as `nobody`, with the system's Python 3.11 (root's pyenv is out of that
user's reach) in a venv made once per machine by `make test-setup` (tests/support/e2e_tools.py).
"""
import ast
import errno
import json
import os
import pwd
import socket
import subprocess

import pytest

from support import e2e_tools
from support.capabilities import needs_root
from support.for_other_users import copied_for_other_users
from support.paths import REFERENCE, ROOT, SUBMISSIONS
from support.rules_off import BYPASS_RULES
from grader.exercises.attention import MAX_SCORE

pytestmark = [pytest.mark.sandbox,
              needs_root("switching to another user needs root; run as a user, the whole suite is this path"),
              pytest.mark.skipif(not e2e_tools.SYSTEM_PYTHON.exists(),
                                 reason=f"no {e2e_tools.SYSTEM_PYTHON} to build the user's venv")]

HOSTILE = {"reference": REFERENCE, **{path.stem: path for path in [
    SUBMISSIONS / "confinement" / "list_processes.py", SUBMISSIONS / "confinement" / "look_around.py",
    SUBMISSIONS / "confinement" / "denied_syscalls.py", SUBMISSIONS / "hostile" / "read_solutions.py",
    SUBMISSIONS / "hostile" / "network.py", SUBMISSIONS / "hostile" / "fork_bomb.py",
    SUBMISSIONS / "hostile" / "memory_bomb.py"]}}
# What only root can give, named exactly (grader/sandbox/confinement.py, memory_cgroup.py).
MISSING_WITHOUT_ROOT = ["uid drop (not root)", "process-count limit (needs a uid of its own)", "memory cgroup (not root)"]
MISSING_WITHOUT_ROOT += [f"judge: {layer}" for layer in MISSING_WITHOUT_ROOT]  # the judge is confined as a worker is
# One process for all files (one fork server), rules off (the sandbox on its own), a memory limit that trips at once.
GRADE_ALL = (BYPASS_RULES + "; import json, sys; from grader.grade import default_limits, grade_submission; "
             "from grader.sandbox.confinement import Limits; "
             "limits = Limits(**{**default_limits().__dict__, 'memory_bytes': 512 << 20}); "
             "print(json.dumps({name: grade_submission(path, limits=limits) for name, path in json.loads(sys.argv[1]).items()}))")


@pytest.fixture(scope="module")
def reports(user_python, tmp_path_factory) -> dict[str, dict]:
    nobody = pwd.getpwnam("nobody")
    home = tmp_path_factory.mktemp("nobody-home")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    listener = socket.socket()  # something to reach on the host for network.py (another run's is as good)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", 47291))
        listener.listen()
    except OSError:
        pass
    try:  # the kit and the files where `nobody` may read them, wherever the clone lives (the reference among them)
        with copied_for_other_users(ROOT / "grader", *HOSTILE.values()) as kit:
            files = {name: str(kit / path.relative_to(ROOT)) for name, path in HOSTILE.items()}
            done = subprocess.run([str(user_python), "-c", GRADE_ALL, json.dumps(files)],
                                  cwd=kit, user=nobody.pw_uid, group=nobody.pw_gid, extra_groups=[],
                                  env={"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(kit)},
                                  capture_output=True, text=True, timeout=900)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr[-3000:]
    return {"uid": nobody.pw_uid, **json.loads(done.stdout)}


def _sdpa(report: dict) -> str:
    return "\n".join(c["message_en"] for c in report["checks"] if c["part"] == "sdpa")


def _sdpa_points(report: dict) -> float:
    return sum(c["points"] for c in report["checks"] if c["part"] == "sdpa")


def test_an_ordinary_user_grades_right_and_is_told_exactly_what_is_missing(reports):
    assert reports["reference"]["score"] == MAX_SCORE
    for name in HOSTILE:
        assert reports[name].get("isolation_missing") == MISSING_WITHOUT_ROOT, (name, reports[name].get("isolation_missing"))


def test_the_user_namespaces_hide_the_host_and_the_worker_runs_as_the_caller(reports):
    assert "1 processes [1], secrets []" in _sdpa(reports["list_processes"])
    messages = _sdpa(reports["look_around"])
    seen = ast.literal_eval(messages[messages.index("seen {") + len("seen "):].split("\n", 1)[0])
    assert seen["dev"] == ["fd", "full", "null", "shm", "urandom", "zero"] and seen["host"] == "grading-sandbox", seen
    assert seen["mount"] == errno.EPERM and seen["tiocsti"] == errno.EPERM, seen
    assert (seen["uid"], seen["gid"]) == (reports["uid"], reports["uid"]), seen  # the caller's own uid, mapped as itself
    assert seen["tmpfs_mib"] == {"/tmp": 64, "/dev/shm": 16} and seen["memory_cgroup_limit"] is None, seen
    assert "work" in seen["tmp"] and not any(name.startswith("pytest-of-") for name in seen["tmp"]), seen
    assert _sdpa_points(reports["read_solutions"]) == 0 and _sdpa_points(reports["network"]) == 0


def test_the_filter_and_the_memory_limit_hold_without_root(reports):
    assert ("errnos {'ptrace': 1, 'shmget': 1, 'add_key': 1, 'fork': 1, 'memfd_create': 1, 'vsock': 1}, thread ran"
            in _sdpa(reports["denied_syscalls"]))
    assert "tampering" in reports["fork_bomb"]["mistakes"] and _sdpa_points(reports["fork_bomb"]) == 0
    assert "memory-limit" in reports["memory_bomb"]["mistakes"] and _sdpa_points(reports["memory_bomb"]) == 0
