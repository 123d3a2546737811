"""Does `make demo` take both labs through one course: each assignment released, its class of Colab downloads
collected, autograded by its own hidden graders, given feedback, exported, summarised and its solutions released,
every hand-in graded as its student was meant to be?

The demo's own steps run here, in a course outside the repository, all but the first (`make build`: the build is
tested in tests/publishing, and `build --check` holds the generated files to it).
"""
from __future__ import annotations

import csv
import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from grader import demo
from grader.exercises import NAMES

pytestmark = pytest.mark.e2e

FIRST_GRADING_STEP = demo.STEPS.index(demo.autograde)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> demo.Demo:
    assert demo.STEPS[0] is demo.run_build
    return demo.Demo(course=tmp_path_factory.mktemp("demo-course") / "demo", lang="en")


@pytest.fixture(scope="module")
def collected(run) -> demo.Demo:
    for step in demo.STEPS[1:FIRST_GRADING_STEP]:
        step(run)
    return run


@pytest.fixture(scope="module")
def graded(collected) -> tuple[demo.Demo, str]:
    """The rest of the demo, and what it printed (its tables and summaries)."""
    printed = io.StringIO()
    with redirect_stdout(printed):
        for step in demo.STEPS[FIRST_GRADING_STEP:]:
            step(collected)  # the last, check_every_student, raises for a hand-in graded otherwise than expected
    return collected, printed.getvalue()


def test_each_assignment_is_released_and_its_class_collected(collected):
    course: Path = collected.course
    for assignment, students in collected.classes.items():
        assert (course / "release" / assignment / f"{assignment}.ipynb").is_file()
        submitted = sorted(p.parts[-3] for p in (course / "submitted").glob(f"*/{assignment}/{assignment}.ipynb"))
        assert submitted == sorted(s.id for s in students), assignment
        assert collected.left_out[assignment] and all(f"'{assignment}.ipynb'" in left
                                                       for left in collected.left_out[assignment])
    assert list(collected.classes) == list(NAMES)


def test_every_hand_in_of_both_labs_is_graded_as_expected(graded):
    run, printed = graded
    total = sum(len(students) for students in run.classes.values())
    assert f"{total} of {total} hand-ins ({len(NAMES)} assignments) graded as expected" in printed, printed
    for assignment in NAMES:
        assert f"Class summary of {assignment}" in printed
        rows = [row for row in run.rows if row["assignment"] == assignment]
        assert len(rows) == len(run.classes[assignment]) and all(row["max_score"] == 20.0 for row in rows)
        assert all(row["report"] and row["feedback"] for row in rows), assignment
        assert (run.course / "release" / assignment / "solutions" / f"{assignment}.ipynb").is_file()


def test_the_exported_grades_hold_both_assignments_for_their_students(graded):
    run, _ = graded
    with (run.course / "grades.csv").open(newline="", encoding="utf-8") as handle:
        exported = {(row["assignment"], row["student_id"]) for row in csv.DictReader(handle)}
    expected = {(assignment, s.id) for assignment, students in run.classes.items() for s in students}
    assert expected <= exported
