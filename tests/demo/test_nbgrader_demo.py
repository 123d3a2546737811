"""Is the `make demo` class built right: every download collectable for its student, the course folder git-ignored?

The demo itself (`make demo`, about a minute and a half) runs every step for real; these checks
are the parts that can be tested in seconds.
"""
from __future__ import annotations

import subprocess

import nbformat

from grader import demo
from grader.build.config import ROOT
from grader.nbgrader.collector import ColabFileNameCollector
from grader.handin.source import read_code_cells, submission_from_cells
from support.nbgrader_course import release_notebook

import pytest

pytestmark = pytest.mark.e2e


def test_the_class_is_about_a_dozen_students_in_every_required_state():
    """Does the demo class have correct answers in several styles, classic mistakes, a stripped Colab notebook,
    a renamed copy and an infinite loop?"""
    students = demo.CLASS
    assert 10 <= len(students) <= 15 and len({s.id for s in students}) == len(students)
    assert len({s.answers for s in students if s.answers.startswith("correct/") or s.answers == "reference"}) >= 3
    assert len([s for s in students if s.answers.startswith("mutants/") and s.expect != "timeout"]) >= 5
    assert any(s.colab == "stripped" for s in students)
    assert any(s.file_name.startswith("Copy of ") for s in students)
    assert any(s.expect == "timeout" for s in students)


def test_every_demo_download_is_collected_for_its_student(tmp_path):
    """Does the collector map each demo student's Colab file name to that student, and leave out the one without an id?"""
    release = release_notebook()
    for student in demo.CLASS:
        nbformat.write(demo.student_notebook(release, student), str(tmp_path / f"{student.id}_{student.file_name}"))
    nbformat.write(release, str(tmp_path / demo.UNMAPPABLE))
    collector = ColabFileNameCollector()
    collector.make_plan(tmp_path, ["attention.ipynb"])
    assert sorted(c.student_id for c in collector.plan.values()) == sorted(s.id for s in demo.CLASS)
    assert [p.rsplit("/", 1)[-1] for p in collector.left_out] == [demo.UNMAPPABLE]


def test_every_demo_notebook_defines_both_graded_names_once_answered(tmp_path):
    """Does each answered demo notebook define the two graded names (so its grade shows its mistake, not a missing cell)?"""
    release = release_notebook()
    for student in demo.CLASS:
        if student.answers == "untouched":
            continue
        path = tmp_path / f"{student.id}.ipynb"
        nbformat.write(demo.student_notebook(release, student), str(path))
        source = submission_from_cells(read_code_cells(path), str(path)).source
        assert "def scaled_dot_product_attention" in source and "class MultiHeadAttention" in source, student.id


def test_the_demo_course_folder_is_git_ignored():
    """Is the demo's course folder (and the browser test's artifacts/) ignored by git, so `git status` stays clean?"""
    for path in ("demo/gradebook.db", "demo/feedback/x/attention/attention.html", "artifacts/feedback.png"):
        done = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert done.returncode == 0, path
