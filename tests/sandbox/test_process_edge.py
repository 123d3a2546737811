"""The instructor edge: library functions change nothing process-wide (torch's threads, the report cache
read from the environment), and the CLI alone turns a GraderError into `grader: ...` and its exit code."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import torch

from support.paths import REFERENCE, ROOT, SUBMISSIONS
from grader import cli
from grader.errors import CourseError, GradebookDisagrees, GraderError, NbgraderFailed, UsageError
from grader.grade import grade_submission
from grader.process import REPORT_CACHE_ENV, open_gradebook, put_nbgrader_tools_on_path
from grader.sandbox.worker_process import SandboxUnavailable

import pytest

pytestmark = pytest.mark.sandbox


def test_grading_leaves_the_callers_torch_threads_alone(tmp_path):
    """An instructor grading from a Jupyter kernel keeps the kernel's thread count."""
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [ not json', encoding="utf-8")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        report = grade_submission(broken)
        assert report["refused"] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_report_cache_is_used_only_when_given(tmp_path, monkeypatch):
    chosen, from_env = tmp_path / "chosen", tmp_path / "from-env"
    monkeypatch.setenv(REPORT_CACHE_ENV, str(from_env))
    syntax_error = SUBMISSIONS / "hostile" / "syntax_error.py"
    first = grade_submission(syntax_error, cache=chosen)
    assert len(list(chosen.glob("*.json"))) == 1
    assert grade_submission(syntax_error, cache=chosen) == first
    assert grade_submission(syntax_error) == first  # no cache given: graded again, stored nowhere
    assert not from_env.exists(), "library code read the cache folder from the environment"


@pytest.mark.unit
def test_the_cli_says_what_is_wrong_on_stderr_with_the_errors_exit_code(tmp_path, capsys):
    assert cli.main(["grade", str(tmp_path / "missing.ipynb")]) == 2
    assert capsys.readouterr().err == f"grader: no such file: {tmp_path / 'missing.ipynb'}\n"
    assert cli.main(["grade-all", str(tmp_path), "--shard", "1/2"]) == 2
    assert capsys.readouterr().err.startswith("grader: --db-url, --db-url-file, --shard and --force go with")


# README's *Exit status* table, as literals: a status changed in the code alone fails here.
DOCUMENTED_EXIT_STATUSES = [
    (GradebookDisagrees("the gradebook holds other scores"), 1),
    (UsageError("no such file"), 2),
    (SandboxUnavailable("the worker could not confine itself"), 2),
    (GraderError("the grader could not run"), 2),
    (CourseError("the gradebook has no such assignment"), 3),
    (NbgraderFailed("nbgrader autograde failed (exit status 1)", 1), 4),
]


@pytest.mark.unit
@pytest.mark.parametrize("error, status", DOCUMENTED_EXIT_STATUSES,
                         ids=[type(error).__name__ for error, _ in DOCUMENTED_EXIT_STATUSES])
def test_each_failure_of_the_grader_exits_with_its_documented_status(error, status, monkeypatch, capsys):
    def fails(args):
        raise error

    monkeypatch.setattr(cli, "run", fails)
    assert cli.main(["grade", "anything.py"]) == status
    assert capsys.readouterr().err == f"grader: {error}\n"


def test_a_course_nbgrader_cannot_grade_is_a_course_error(tmp_path, capsys):
    """A course whose gradebook (created through alembic, on PATH by the entry point) records no
    assignment: the instructor must record it first. (A folder with no gradebook at all is no course:
    test_grade_all_outside_a_course.py.)"""
    put_nbgrader_tools_on_path()
    with open_gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}"):
        pass
    status = cli.main(["grade-all", str(tmp_path), "--nbgrader", "attention"])
    err = capsys.readouterr().err
    assert status == 3, err
    assert err.startswith("grader: the gradebook (") and "has no assignment 'attention'" in err


def test_a_run_the_report_cache_answers_starts_no_fork_server(tmp_path):
    """With a report cache, the fork server (a second torch import) starts at the first report the cache
    lacks: a re-run over graded work starts none, and prints the same report."""
    run = ("import multiprocessing.forkserver as f, sys; from grader.cli import main; main(sys.argv[1:]); "
           "print(f._forkserver._forkserver_pid is not None)")
    environment = {**os.environ, REPORT_CACHE_ENV: str(tmp_path / "cache")}
    outputs = [subprocess.run([sys.executable, "-c", run, "grade", str(REFERENCE), "--json"], cwd=ROOT, env=environment,
                              capture_output=True, text=True, timeout=300).stdout.rsplit("\n", 2)[:2]
               for _ in range(2)]
    (first, first_started), (again, again_started) = outputs
    assert (first_started, again_started) == ("True", "False")
    assert json.loads(first) == json.loads(again)


# Starts the fork server and ends at once; a hook registered first runs last at exit (atexit is last in, first
# out), after the grader's own, and says whether the fork server is still there then.
START_AND_END = """
import atexit, multiprocessing.forkserver, os, sys
from grader.sandbox.worker_process import start_fork_server
atexit.register(lambda: print(os.path.exists(f"/proc/{multiprocessing.forkserver._forkserver._forkserver_pid}")))
start_fork_server()
assert "torch" not in sys.modules
"""


def test_a_process_that_starts_no_worker_leaves_no_fork_server_behind():
    """An entry point without a cache starts the fork server at once, before it reads a submission; where it
    then starts no worker (every submission refused, say) and ends, the fork server is stopped with it, not
    left importing torch for seconds more (while the process waits for it to end)."""
    done = subprocess.run([sys.executable, "-c", START_AND_END], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"], "the fork server outlived the process's own exit handlers"
