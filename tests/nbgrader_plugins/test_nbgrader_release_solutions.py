"""Does `python -m grader release-solutions` refuse while submissions are ungraded, naming them, and publish once all are?"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from grader.build.colab_badge import colab_url
from grader.build.config import ROOT
from grader.process import nbgrader_env
from grader.build.release_solutions import ungraded
from support.nbgrader_course import COLAB_FILE_NAMES, shared_class

pytestmark = pytest.mark.e2e


@pytest.fixture()
def course(tmp_path_factory, tmp_path):
    """A copy of the shared class's course, autograded (copied with its times, so graded stays newer than submitted)."""
    copy = tmp_path / "course"
    shutil.copytree(shared_class(tmp_path_factory).course.root, copy, symlinks=True)
    return copy


def release(course, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "grader", "release-solutions", "attention", f"--course={course}", *extra]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


def published(course):
    return course / "release" / "attention" / "solutions"


def test_a_fully_autograded_class_gets_the_solutions(course):
    """With every submission autograded, are the solution notebook and module published into release/attention/solutions/?"""
    done = release(course)
    assert done.returncode == 0, done.stderr
    notebook = published(course) / "attention.ipynb"
    assert (published(course) / "attention.py").read_bytes() == (ROOT / "solutions/attention/attention.py").read_bytes()
    nb = nbformat.read(notebook, as_version=4)
    badge = nb.cells[0].source
    assert colab_url("release/attention/solutions/attention.ipynb") in badge  # the badge opens the published copy
    assert "raise NotImplementedError" not in "\n".join(c.source for c in nb.cells if c.cell_type == "code")


def test_refused_while_a_submission_is_not_autograded_then_forced(course):
    """Is the release refused (non-zero, naming the notebook) for a new ungraded submission, and done with --force?"""
    late = course / "submitted" / "late.student" / "attention" / "attention.ipynb"
    late.parent.mkdir(parents=True)
    shutil.copyfile(course / "submitted" / "colab40" / "attention" / "attention.ipynb", late)
    done = release(course)
    assert done.returncode == 1
    assert "submitted/late.student/attention/attention.ipynb (not autograded)" in done.stderr
    assert not published(course).exists()
    forced = release(course, "--force")
    assert forced.returncode == 0 and (published(course) / "attention.ipynb").is_file()


def test_a_submission_changed_after_autograde_is_named(course):
    """Is a notebook resubmitted after it was autograded (newer than its autograded copy) reported as changed?"""
    resubmitted = course / "submitted" / "split" / "attention" / "attention.ipynb"
    later = (course / "autograded" / "split" / "attention" / "attention.ipynb").stat().st_mtime + 60
    os.utime(resubmitted, (later, later))
    assert ungraded(course, "attention") == ["submitted/split/attention/attention.ipynb (changed after it was autograded)"]


def test_a_submission_missing_from_the_gradebook_is_named(course):
    """Is an autograded notebook whose grades are not in the gradebook (a fresh gradebook) still counted as ungraded?"""
    (course / "gradebook.db").unlink()
    problems = ungraded(course, "attention")
    assert len(problems) == len(COLAB_FILE_NAMES) and all(p.endswith("(no grades in the gradebook)") for p in problems)


def test_advice_after_a_recollected_submission_works_as_written(course):
    """After `zip_collect --force` re-collects a notebook (newer than its autograded copy), does the refusal print
    the command that regrades it (plain `nbgrader autograde` skips it), and does running that command unblock the release?"""
    submission = course / "submitted" / "colab40" / "attention" / "attention.ipynb"
    autograded = course / "autograded" / "colab40" / "attention" / "attention.ipynb"
    later = autograded.stat().st_mtime + 1  # collected again after grading (and before the regrade below)
    os.utime(submission, (later, later))
    done = release(course)
    assert done.returncode == 1
    command = "nbgrader autograde attention --force --student=colab40"
    assert command in done.stderr and "make release-solutions ASSIGNMENT=attention FORCE=1" in done.stderr

    def nbgrader(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}"], cwd=ROOT,
                       env=nbgrader_env(), capture_output=True, text=True, timeout=600, check=True)

    nbgrader("autograde", "attention")  # what the old advice said: it skips the existing student
    assert release(course).returncode == 1
    nbgrader(*command.split()[1:])
    assert release(course).returncode == 0


def test_everything_nbgrader_writes_into_the_course_root_is_git_ignored(course):
    """After a class is graded and exported, would `git add .` in the course root pick up nothing nbgrader wrote
    (grades.csv with every student's grade, logs, caches, the gradebook)?"""
    subprocess.run([sys.executable, "-m", "nbgrader", "export", f"--CourseDirectory.root={course}"], cwd=course,
                   env=nbgrader_env(), capture_output=True, text=True, timeout=300, check=True)
    assert (course / "grades.csv").is_file()
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split())
    written = [path.relative_to(course).as_posix() for path in course.rglob("*") if path.is_file()]
    candidates = [path for path in written if path not in tracked and not path.startswith(("source/", "release/"))]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-z"], cwd=ROOT,
                             input="\0".join(candidates), capture_output=True, text=True).stdout.split("\0")
    assert sorted(set(candidates) - set(ignored)) == []


def make_plan(*args: str) -> subprocess.CompletedProcess:
    # under `make test` this runs as a sub-make, which would print "Entering directory" lines around the plan
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "-n", "--no-print-directory", "release-solutions", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def planned(*args: str) -> str:
    return next(line for line in make_plan(*args).stdout.splitlines() if "release-solutions" in line)


def test_make_passes_force_through_only_when_asked():
    """`make release-solutions ASSIGNMENT=attention FORCE=1`, as the refusal advises, runs the verb with --force;
    without it, never."""
    assert planned("ASSIGNMENT=attention", "FORCE=1").endswith("-m grader release-solutions attention --force")
    assert "--force" not in planned("ASSIGNMENT=attention")


def test_make_releases_the_assignment_it_is_told_and_none_untold():
    """Each lab's solutions are released on their own: make names the assignment it was given, and without one it
    releases nothing and says how to name it."""
    assert planned("ASSIGNMENT=kv_cache").rstrip().endswith("-m grader release-solutions kv_cache")
    untold = make_plan()
    assert untold.returncode != 0 and "grader release-solutions" not in untold.stdout
    assert "make release-solutions ASSIGNMENT=attention (or kv_cache)" in untold.stderr
