"""Where the sandbox cannot start, does every entry point say so in one line before grading anything, and write no 0?

The machine is made one without a sandbox the way a Python without pidfds is (a `sitecustomize` on PYTHONPATH
deletes `os.pidfd_open` in every process of the run, `make` and nbgrader's included); `problem()` itself is
asked about macOS and Windows by its platform. Each entry point must end with a non-zero status and one line
naming the reason and what to do (docs/instructors/where-grading-runs.md), and leave no grade behind.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.process import ROOT, nbgrader_env
from grader.sandbox import availability
from support.nbgrader_course import ASSIGNMENT, Course, correct_notebook

pytestmark = pytest.mark.unit

SUBMISSION = ROOT / "solutions" / "attention" / "attention.py"
NO_PIDFD = "import os\ndel os.pidfd_open\n"


def without_sandbox(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine whose Python has no pidfds, for every Python process started in it."""
    site = tmp_path / "no-pidfd"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(NO_PIDFD, encoding="utf-8")
    env = nbgrader_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH", "")]))
    env.pop("ATTENTION_KIT_REPORT_CACHE", None)  # a cached report must not stand in for grading here
    return env


def run(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def the_one_line(done: subprocess.CompletedProcess) -> str:
    """stderr's refusal, which must be the only line about the sandbox and name the reason and the way out."""
    lines = [line for line in done.stderr.splitlines() if "sandbox cannot run here" in line]
    assert len(lines) == 1, done.stderr
    assert "pidfd" in lines[0] and "no score was written" in lines[0], lines[0]
    assert "sudo" in lines[0] and "Linux VM" in lines[0] and "Gradescope" in lines[0], lines[0]
    assert availability.WHERE_IT_RUNS in lines[0] and (ROOT / availability.WHERE_IT_RUNS).is_file()
    return lines[0]


@pytest.mark.parametrize("platform", ["darwin", "win32", "cygwin"])
def test_problem_names_a_system_without_linux(monkeypatch, platform):
    """macOS and Windows have no Linux namespaces, seccomp or pidfds: no worker can start there."""
    monkeypatch.setattr(sys, "platform", platform)
    assert availability.problem() == f"the sandbox needs Linux and this machine runs {platform}"


def test_problem_names_a_python_without_pidfds(monkeypatch):
    monkeypatch.delattr(os, "pidfd_open")
    assert "pidfd" in availability.problem()


def test_problem_is_none_where_the_suite_grades():
    """The suite's own machine grades (CI is Linux as root): the check must not refuse it."""
    assert availability.problem() is None


def test_grade_refuses_in_one_line(tmp_path):
    done = run([sys.executable, "-m", "grader", "grade", str(SUBMISSION), "--json"], without_sandbox(tmp_path))
    assert done.returncode == 2, done.stderr
    assert the_one_line(done).startswith("grader: ")
    assert done.stdout == ""  # no report, so no score of any kind


def test_grade_all_refuses_in_one_line_and_writes_no_row(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copyfile(SUBMISSION, folder / "s1_attention.py")
    out = tmp_path / "reports.json"
    done = run([sys.executable, "-m", "grader", "grade-all", str(folder), "--json", str(out)], without_sandbox(tmp_path))
    assert done.returncode == 2, done.stderr
    the_one_line(done)
    assert not out.exists() and "s1" not in done.stdout
    assert sorted(p.name for p in folder.iterdir()) == ["s1_attention.py"]


def test_gradescope_run_refuses_in_one_line_and_writes_no_results(tmp_path):
    """Gradescope would record a results.json's score; with none, it shows the autograder failed, not a 0."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    shutil.copyfile(SUBMISSION, root / "submission" / "attention.py")
    done = run([sys.executable, "-m", "grader", "gradescope", "run", f"--root={root}"], without_sandbox(tmp_path))
    assert done.returncode == 2, done.stderr
    the_one_line(done)
    assert not (root / "results").exists()


@pytest.mark.e2e
def test_nbgrader_autograde_refuses_before_the_first_student(tmp_path):
    """The kit's pre-convert hook stops autograde before the gradebook hears of anyone: no grade row, no
    autograded copy, the submission as it was."""
    course = Course.create(tmp_path / "course")
    submitted = course.submitted("s1")
    submitted.parent.mkdir(parents=True)
    nbformat.write(correct_notebook(course), submitted)
    before = submitted.read_bytes()
    done = run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, f"--CourseDirectory.root={course.root}"],
               without_sandbox(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert the_one_line(done).startswith("attention-kit: ")
    assert course.scores() == {}
    assert not course.autograded("s1").exists()
    assert submitted.read_bytes() == before


@pytest.mark.e2e
def test_make_demo_refuses_before_building(tmp_path):
    """`make demo` (with `.venv` already made) stops before the build and before its demo class is graded."""
    demo = ROOT / "demo"
    before = sorted(str(p) for p in demo.rglob("*")) if demo.exists() else None
    done = run(["make", "--no-print-directory", "demo"], without_sandbox(tmp_path))
    assert done.returncode != 0
    the_one_line(done)
    assert "demo:" not in done.stdout  # no step of the demo ran
    assert (sorted(str(p) for p in demo.rglob("*")) if demo.exists() else None) == before

