"""Does the worker see none of the caller's folders, and is a sandbox that cannot start the grader's
failure (an error, exit status 2, a row that says so), never a student's 0?"""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from support.capabilities import needs_root

from support.paths import REFERENCE, ROOT
from grader.exercises.attention import MAX_SCORE
from grader.grade import default_limits, grade_submission
from grader.grade_all.folder import grade_one
from grader.sandbox import worker
from grader.sandbox.confinement import SCRATCH, Limits
from grader.sandbox.worker_process import SandboxUnavailable, Worker, WorkerFailure

pytestmark = pytest.mark.sandbox

AS_ROOT = needs_root("the worker's own root and /tmp need root (CI runs as root)")

PATHS_SEEN_FROM = """
import json, sys
sys.path[:0] = [sys.argv[1], "/tmp"]
from grader.sandbox.worker_process import python_paths
print(json.dumps(python_paths()))
"""


def test_the_callers_folders_and_the_scratch_folders_parent_are_not_shown(tmp_path):
    script = tmp_path / "scripts" / "grade_my_class.py"
    script.parent.mkdir()
    script.write_text(PATHS_SEEN_FROM)
    cwd = tmp_path / "class_folder"
    cwd.mkdir()
    result = subprocess.run([sys.executable, str(script), str(cwd)], cwd=cwd, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    paths = json.loads(result.stdout)
    assert not any(p in (str(cwd), str(script.parent), "/tmp", "/", str(ROOT)) for p in paths), paths
    assert any(sys.prefix == p or sys.prefix.startswith(p + os.sep) or os.path.realpath(sys.prefix).startswith(p)
               for p in paths), "the interpreter's own prefix stays visible"


@AS_ROOT
def test_a_grading_script_saved_in_tmp_grades_right():
    """An instructor's own script in /tmp puts /tmp on the import path; the worker's /tmp stays its own."""
    script = Path("/tmp") / f"attention-kit-{uuid.uuid4().hex}.py"
    script.write_text("import json, sys\nfrom grader.grade import grade_submission\n"
                      "print(json.dumps(grade_submission(sys.argv[1])['score']))\n")
    try:
        result = subprocess.run([sys.executable, str(script), str(REFERENCE)], cwd=ROOT, capture_output=True,
                                text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        script.unlink()
    assert result.returncode == 0 and json.loads(result.stdout) == MAX_SCORE, result.stderr[-2000:]


def unworkable_limits() -> Limits:
    """Limits whose confinement fails before any submission code runs: the host's /tmp bound read-only
    over the worker's own, so its scratch folder cannot be made."""
    return Limits(**{**default_limits().__dict__, "visible": default_limits().visible + ["/tmp"]})


@AS_ROOT
def test_a_sandbox_that_cannot_start_raises_instead_of_scoring():
    with pytest.raises(SandboxUnavailable, match="could not be set up.*" + SCRATCH):
        grade_submission(REFERENCE, limits=unworkable_limits())


@AS_ROOT
def test_grade_all_gives_a_row_that_names_the_graders_failure(monkeypatch, tmp_path):
    monkeypatch.setattr("grader.grade.default_limits", unworkable_limits)
    row = grade_one("alice", REFERENCE, REFERENCE.parent)
    assert row["score"] == 0 and row["mistakes"] == [] and "SandboxUnavailable" in row["error"], row


@AS_ROOT
def test_the_grade_verb_exits_2_with_the_reason(tmp_path):
    patch = ("import grader.grade as g; from grader.sandbox.confinement import Limits; d = g.default_limits; "
             "g.default_limits = lambda: Limits(**{**d().__dict__, 'visible': d().visible + ['/tmp']}); ")
    result = subprocess.run([sys.executable, "-c", patch + "import runpy; runpy.run_module('grader', run_name='__main__')",
                             "grade", str(REFERENCE)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "grader: the sandbox could not be set up" in result.stderr, result.stderr[-2000:]
    assert "Score" not in result.stdout


def test_a_submission_cannot_forge_the_setup_frame(tmp_path, rules_bypassed):
    """The parent reads the worker's setup frame before student code runs: a forged one written at
    definition time is just the submission's first answer, refused or ignored, and graded as its own."""
    forged = worker.encode({"setup_failed": "forged by the student"})
    frame = (len(forged)).to_bytes(4, "big", signed=True) + forged
    path = tmp_path / "forged_setup.py"
    path.write_text(f"""import os, stat


def _forge():
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, {frame!r})
        except OSError:
            pass
    os._exit(0)


def scaled_dot_product_attention(Q, K, V, is_causal=True, _forged=_forge()):  # runs when the def runs
    pass
""")
    report = grade_submission(path)  # raises SandboxUnavailable if the forged frame were read as the setup's
    assert report["score"] == 0 and "tampering" in report["mistakes"], report["mistakes"]


def test_a_submission_out_of_time_meets_a_timeout_not_a_grader_error():
    """A worker started when the submission has almost no time left (a slow Part 1, then Part 2's fresh
    worker): setting up is the grader's own work and gets its own deadline; loading the code gets what is left."""
    slow = "import time\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True, _=time.sleep(5)):\n    pass\n"
    with pytest.raises(WorkerFailure) as failure:
        Worker(slow, Limits(**{**default_limits().__dict__, "probe_seconds": 0.001}), False)
    assert failure.value.kind == "timeout"
