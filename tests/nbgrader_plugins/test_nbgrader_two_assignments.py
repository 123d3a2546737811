"""Do both labs live in one nbgrader course: each assignment released from its own source notebook, Colab downloads
collected for their own assignment, and `nbgrader autograde` of each writing that assignment's grade with its own
hidden graders (the solution full marks, a stripped Colab copy of an honest style full marks, a mutant below full marks
with its id in the report, the untouched release 0)?"""
from __future__ import annotations

import shutil

import nbformat
import pytest

from grader.demo import stored_report
from grader.exercises import NAMES, exercise
from grader.process import open_gradebook
from support import colab_notebooks as cn
from support.nbgrader_course import Course, Run
from support.paths import ROOT, SUBMISSIONS

pytestmark = pytest.mark.e2e

HAND_INS = {  # assignment -> student -> (the answers, the id the grader should name or "" for full marks)
    "attention": {"ada": ("reference", ""), "bo": ("correct/einsum_where_torchsoftmax", ""),
                  "cy": ("mutants/mask-diagonal", "mask-diagonal"), "di": ("untouched", "not-implemented")},
    "kv_cache": {"ada": ("reference", ""), "bo": ("kv_cache/correct/repeat_interleave_slice_plain", ""),
                 "cy": ("kv_cache/mutants/repeat-kv-order", "repeat-kv-order"), "di": ("untouched", "not-implemented")},
}
FILE_NAMES = {"ada": "{}.ipynb", "bo": "Copy of {}.ipynb", "cy": "{} (1).ipynb", "di": "{}.ipynb 的副本"}
"""The name Colab gave each student's download, per assignment."""


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> tuple[Course, dict[str, Run]]:
    """One course with every declared exercise as an assignment; each class zip-collected, then autograded."""
    course = Course(tmp_path_factory.mktemp("two-labs"))
    for assignment in NAMES:
        source = course.root / "source" / assignment
        source.mkdir(parents=True)
        shutil.copyfile(ROOT / exercise(assignment).source_notebook, source / f"{assignment}.ipynb")
        course.nbgrader("generate_assignment", assignment, "--force")
    runs = {}
    for assignment, students in HAND_INS.items():
        release = nbformat.read(course.root / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        extracted = course.root / "downloaded" / assignment / "extracted"
        for student, (answers, _) in students.items():
            if answers == "untouched":
                nb = release
            elif answers == "reference":
                nb = cn.answered(release, cn.reference_answers(assignment))
            else:
                nb = cn.answered(release, cn.answers_from_python(SUBMISSIONS / f"{answers}.py"))
            nb = cn.colab_saved(cn.strip_nbgrader(nb) if student == "bo" else nb, seed=student)
            cn.write(nb, extracted / f"{student}_{FILE_NAMES[student].format(assignment)}")
        cn.write(release, extracted / f"{assignment}.ipynb")  # no student id: left out
        runs[f"zip_collect {assignment}"] = course.nbgrader("zip_collect", assignment)
    for assignment in NAMES:
        runs[f"autograde {assignment}"] = course.nbgrader("autograde", assignment, check=False)
    return course, runs


def test_each_download_is_collected_into_its_own_assignment(course):
    course, runs = course
    for assignment, students in HAND_INS.items():
        collected = sorted(p.parts[-3] for p in (course.root / "submitted").glob(f"*/{assignment}/{assignment}.ipynb"))
        assert collected == sorted(students), runs[f"zip_collect {assignment}"].output
        assert f"Not collected: '{assignment}.ipynb'" in runs[f"zip_collect {assignment}"].output
    assert sorted(p.name for p in (course.root / "submitted").iterdir()) == ["ada", "bo", "cy", "di"]


@pytest.mark.parametrize("assignment", NAMES)
def test_autograde_writes_each_assignments_grade_with_its_own_graders(course, assignment):
    course, runs = course
    run = runs[f"autograde {assignment}"]
    assert run.returncode == 0, run.output[-3000:]
    own_parts = set(exercise(assignment).part_ids)
    foreign_parts = {part for name in NAMES if name != assignment for part in exercise(name).part_ids}
    with open_gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        for student, (_, expected) in HAND_INS[assignment].items():
            graded = gradebook.find_submission_notebook(assignment, assignment, student)
            assert graded.max_score == 20.0, (student, graded.max_score)
            if not expected:
                assert graded.score == 20.0, (student, graded.score)
            elif expected == "not-implemented":
                assert graded.score == 0.0, (student, graded.score)
            else:
                assert graded.score < 20.0, (student, graded.score)
            report = stored_report(course.root / "autograded" / student / assignment / f"{assignment}.ipynb")
            parts = {check["part"] for check in report["checks"]}
            assert own_parts <= parts and not parts & foreign_parts, (student, parts)
            assert (expected in report["mistakes"]) if expected else report["mistakes"] == [], (student, report["mistakes"])
