"""Through nbgrader, does any secret of the instructor reach a worker, a report or a feedback page?

The gradebook's URL comes from `--db-url-file` (the gradebook sits in a folder whose name is the
canary), a fake `ATTENTION_KIT_DB_URL` and a cloud key sit in the environment. `grade-all --nbgrader`
grades the class (the file's URL in its memory, the environment's too); while the submission
(quote_secrets.py) waits, the test reads the fork server's and the worker's memory from outside;
then `nbgrader generate_feedback` writes the page. No canary anywhere.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from support import colab_notebooks as cn
from support.capabilities import needs_root
from support.paths import ROOT
from support.rules_off import BYPASS_RULES
from grader.process import PROBE_SECONDS_ENV, nbgrader_env
from support.nbgrader_course import Course
from support.secrets_in_memory import HOSTILE, canary, descendants, fork_servers, secrets_in_memory, waiting_worker

pytestmark = [pytest.mark.e2e,
              needs_root("reading another uid's memory needs root (CI runs as root)")]

# grade-all with the rules off (the sandbox on its own); `nbgrader autograde` finds its reports in the cache
GRADE_ALL = [sys.executable, "-c", f"{BYPASS_RULES}; import runpy; runpy.run_module('grader', run_name='__main__')"]


def test_no_secret_reaches_a_worker_a_report_or_a_feedback_page(tmp_path):
    course = Course.create(tmp_path / "course")
    cn.write(cn.answered(course.release, cn.answers_from_python(HOSTILE)), course.submitted("mallory"))
    in_file, database, cloud = canary(), canary(), canary()
    gradebook = tmp_path / in_file / "gradebook.db"
    gradebook.parent.mkdir()
    shutil.move(course.root / "gradebook.db", gradebook)
    url_file = tmp_path / "db-url"
    url_file.write_text(f"sqlite:///{gradebook}\n")
    url_file.chmod(0o600)
    # the submission waits while this test scans memory from outside (seconds): long probes, as in
    # test_no_secret_in_worker, instead of the session's (grade-all passes them on to nbgrader autograde)
    env = {**nbgrader_env(), "ATTENTION_KIT_DB_URL": f"postgresql+psycopg2://grader:{database}@db.example/gradebook",
           "AWS_SECRET_ACCESS_KEY": cloud, PROBE_SECONDS_ENV: "90"}
    out = tmp_path / "reports.json"
    grading = subprocess.Popen([*GRADE_ALL, "grade-all", str(course.root), "--nbgrader", "attention", "--db-url-file",
                                str(url_file), "--json", str(out), "--lang", "en"],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen = {}
    try:
        deadline = time.monotonic() + 900
        while grading.poll() is None and time.monotonic() < deadline:
            worker = waiting_worker(grading.pid)
            if worker is None:
                time.sleep(0.05)
                continue
            for server in fork_servers(grading.pid):
                for member in [server] + descendants(server):
                    if member not in seen and (found := secrets_in_memory(member)) is not None:
                        seen[member] = found
            os.unlink(f"/proc/{worker}/root/tmp/work/ready")
        stdout, stderr = grading.communicate(timeout=900)
    finally:
        grading.kill()
    assert grading.returncode == 0, (stdout + stderr)[-3000:]
    planted = {value.encode() for value in (in_file, database, cloud)}
    report = json.loads(out.read_text())[0]
    messages = "\n".join(c["message_en"] for c in report["checks"] if c["part"] == "sdpa")
    assert "secrets found: []" in messages, messages
    assert len(seen) >= 3, "the fork server, a forked worker and its pid 1 were scanned"
    assert {pid: found & planted for pid, found in seen.items() if found & planted} == {}
    course.nbgrader("generate_feedback", "attention", f"--CourseDirectory.db_url=sqlite:///{gradebook}")
    written = [out, course.autograded("mallory"), course.feedback("mallory")]
    assert course.feedback("mallory").is_file()
    assert not [path for path in written if any(value in path.read_bytes() for value in planted)]
    assert not any(value in stdout + stderr for value in planted)
