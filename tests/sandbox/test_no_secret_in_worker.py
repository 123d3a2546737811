"""Can student code find an instructor's secret (the gradebook's password, a cloud key) anywhere in its
process, and does any reach a report?

Canaries are planted where an instructor's secrets live: the grader's environment (docs/instructors/big-class.md's
`export ATTENTION_KIT_DB_URL=...`, a cloud key) and its command line (nbgrader's `--db=...`). The
submission (quote_secrets.py) searches its own memory and quotes what it finds; while it waits, the
test reads the fork server's and every worker process's whole memory from outside (/proc/PID/mem over
/proc/PID/maps, as root). Nothing may be found, and the report must not hold a canary either. Once
grading as root (CI), once as an ordinary user (user namespaces; tests/sandbox/conftest.py's `user_python`).
"""
import json
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.capabilities import needs_root

from support.for_other_users import copied_for_other_users
from support.paths import ROOT

from support.rules_off import BYPASS_RULES
from support.secrets_in_memory import HOSTILE, canary, descendants, fork_servers, secrets_in_memory, waiting_worker

pytestmark = [pytest.mark.sandbox,
              needs_root("reading another uid's memory needs root (CI runs as root)")]

# A grading run whose command line holds a secret, as `nbgrader autograde --db=...` does; long
# probe limits, so the submission can wait for the scan.
GRADE = (BYPASS_RULES + "; import json, sys; from grader.grade import default_limits, grade_submission; "
         "from grader.sandbox.confinement import Limits; "
         "limits = Limits(**{**default_limits().__dict__, 'probe_seconds': 90.0, 'submission_seconds': 180.0}); "
         "print(json.dumps(grade_submission(sys.argv[1], limits=limits)))")


@pytest.fixture(params=["root", "nobody"])
def grader_as(request, tmp_path) -> Iterator[tuple[str, dict, dict, Path]]:
    """(interpreter, the user to run as, its base environment, the kit's folder): root as CI runs, or an ordinary
    user with the system Python's venv (test_unprivileged.py), whose worker lives in user namespaces, grading a copy
    of the kit it may read wherever the clone lives."""
    if request.param == "root":
        yield sys.executable, {}, dict(os.environ), ROOT
        return
    nobody = pwd.getpwnam("nobody")
    os.chown(tmp_path, nobody.pw_uid, nobody.pw_gid)
    with copied_for_other_users(ROOT / "grader", HOSTILE) as kit:
        yield (str(request.getfixturevalue("user_python")), {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []},
               {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8", "PYTHONPATH": str(kit)}, kit)


def test_no_secret_of_the_grader_is_in_any_worker_nor_in_the_report(grader_as):
    python, user, base, kit = grader_as
    database, cloud, argument = canary(), canary(), canary()
    env = {**base, "ATTENTION_KIT_DB_URL": f"postgresql+psycopg2://grader:{database}@db.example/gradebook",
           "AWS_SECRET_ACCESS_KEY": cloud}
    hostile = kit / HOSTILE.relative_to(ROOT)
    grading = subprocess.Popen([python, "-c", GRADE, str(hostile), f"--db=postgresql://grader:{argument}@db/gb"],
                               cwd=kit, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **user)
    scanned, seen = set(), {}
    try:
        deadline = time.monotonic() + 240
        while grading.poll() is None and time.monotonic() < deadline:
            worker = waiting_worker(grading.pid)
            if worker is None:
                time.sleep(0.05)
                continue
            for member in fork_servers(grading.pid) + descendants(fork_servers(grading.pid)[0]):
                if member not in scanned:
                    scanned.add(member)
                    if (found := secrets_in_memory(member)) is not None:
                        seen[member] = found
            os.unlink(f"/proc/{worker}/root/tmp/work/ready")
        out, err = grading.communicate(timeout=240)
    finally:
        grading.kill()
    assert grading.returncode == 0, err[-3000:]
    planted = {value.encode() for value in (database, cloud, argument)}
    report = json.loads(out)
    messages = "\n".join(c["message_en"] for c in report["checks"] if c["part"] == "sdpa")
    assert "secrets found: []" in messages, messages  # the submission looked, and found nothing
    assert not any(value in out + err for value in planted)
    assert len(seen) >= 3, "the fork server, a forked worker and its pid 1 were scanned"
    assert {pid: found & planted for pid, found in seen.items() if found & planted} == {}
