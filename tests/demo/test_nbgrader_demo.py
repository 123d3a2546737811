"""Are the `make demo` classes built right: one per assignment, every download collectable for its student, the
course folder git-ignored?

The demo itself (`make demo`, about a minute and a half) runs every step for real; these checks
are the parts that can be tested in seconds.
"""
from __future__ import annotations

import re
import subprocess

import nbformat

from grader import demo
from grader.build.config import ROOT
from grader.exercises import NAMES, exercise
from grader.nbgrader.collector import ColabFileNameCollector
from grader.handin.source import read_code_cells, submission_from_cells

import pytest

pytestmark = pytest.mark.e2e


def release_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "release" / assignment / f"{assignment}.ipynb", as_version=4)


def test_the_demo_grades_every_declared_assignment():
    """Does `make demo` hand in and grade each exercise the kit declares, each as its own nbgrader assignment?"""
    assert list(demo.Demo(course=ROOT / "demo").classes) == list(NAMES) == ["attention", "kv_cache"]


@pytest.mark.parametrize("assignment", NAMES)
def test_each_class_has_every_required_state(assignment):
    """Does each demo class have correct answers in several styles, classic mistakes of its own lab, a stripped
    Colab notebook, a renamed copy and the untouched release?"""
    students = demo.Demo(course=ROOT / "demo").classes[assignment]
    assert 8 <= len(students) <= 15 and len({s.id for s in students}) == len(students)
    assert len({s.answers for s in students if "correct/" in s.answers or s.answers == "reference"}) >= 3
    assert len({s.expect for s in students if "mutants/" in s.answers and s.expect != "timeout"}) >= 5
    assert any(s.colab == "stripped" for s in students) and any(s.colab == "saved" for s in students)
    assert any(s.file_name.startswith("Copy of ") for s in students)
    assert any(s.answers == "untouched" and s.expect == "not-implemented" for s in students)
    assert all(s.file_name.startswith(assignment) or s.file_name.startswith(f"Copy of {assignment}")
               for s in students)


def test_the_first_lab_keeps_its_infinite_loop_and_the_second_names_its_own_mistakes():
    classes = demo.Demo(course=ROOT / "demo").classes
    assert any(s.expect == "timeout" for s in classes["attention"])
    assert {"repeat-kv-order", "cache-mask-offset", "cache-position", "kv-heads-ignored", "wrong-scale"} <= {
        s.expect for s in classes["kv_cache"]}
    assert all(s.answers.startswith("kv_cache/") for s in classes["kv_cache"] if "/" in s.answers)


@pytest.mark.parametrize("assignment", NAMES)
def test_every_demo_download_is_collected_for_its_student(assignment, tmp_path):
    """Does the collector map each demo student's Colab file name to that student, and leave out the one without an id?"""
    release = release_notebook(assignment)
    students = demo.Demo(course=ROOT / "demo").classes[assignment]
    for student in students:
        nbformat.write(demo.student_notebook(release, assignment, student), str(tmp_path / f"{student.id}_{student.file_name}"))
    nbformat.write(release, str(tmp_path / demo.unmappable(assignment)))
    collector = ColabFileNameCollector()
    collector.make_plan(tmp_path, [f"{assignment}.ipynb"])
    assert sorted(c.student_id for c in collector.plan.values()) == sorted(s.id for s in students)
    assert [p.rsplit("/", 1)[-1] for p in collector.left_out] == [demo.unmappable(assignment)]


@pytest.mark.parametrize("assignment", NAMES)
def test_every_demo_notebook_defines_its_graded_names_once_answered(assignment, tmp_path):
    """Does each answered demo notebook define its lab's graded names, each once, and none the other lab grades that
    this lab does not provide (so its grade shows its mistake, not a missing cell)?"""
    release = release_notebook(assignment)
    own = exercise(assignment).graded_names
    provided = "\n".join(exercise(assignment).provided_code)  # lab 2 gives lab 1's causal attention
    others = [name for each in NAMES if each != assignment for name in exercise(each).graded_names
              if name not in provided]
    for student in demo.Demo(course=ROOT / "demo").classes[assignment]:
        if student.answers == "untouched":
            continue
        path = tmp_path / f"{student.id}.ipynb"
        nbformat.write(demo.student_notebook(release, assignment, student), str(path))
        source = submission_from_cells(read_code_cells(path), str(path)).source
        for name in own:
            assert len(re.findall(rf"^(?:def|class) {name}\b", source, re.M)) == 1, (student.id, name)
        assert not [name for name in others if re.search(rf"^(?:def|class) {name}\b", source, re.M)], student.id


def test_the_demo_course_folder_is_git_ignored():
    """Is the demo's course folder (and the browser test's artifacts/) ignored by git, so `git status` stays clean?"""
    for path in ("demo/gradebook.db", "demo/feedback/x/attention/attention.html", "artifacts/feedback.png"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert done.returncode == 0, path
