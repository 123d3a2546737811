"""Does a class with one forged graph in it get every row, the forger's saying why?

Issue 41's route: a hand-in whose worker sends a graph that crashes whatever runs it (an `aten._reshape_alias`
whose strides reach far past its storage), in a class of honest ones. Before the judge, the parent that ran the
graph died with it, and `grade-all --jobs 2` graded the dead job's hand-ins again in its own process, which died
too: exit 139, no rows, no JSON. Graded with every worker rule off (so the forged graph reaches the grading's
judge), under `grade-all --jobs 2` and under `nbgrader autograde`, every hand-in has its row and the forger's says
why it scores nothing for Part 1.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import nbformat
import pytest

from support import colab_notebooks as cn
from support.nbgrader_course import Course, correct_notebook
from support.paths import ROOT, SUBMISSIONS
from support.rules_off import BYPASS_RULES, GRADER_WITHOUT_RULES
from grader.build.config import ASSIGNMENT
from grader.process import nbgrader_env

pytestmark = pytest.mark.sandbox

FORGED = SUBMISSIONS / "judge" / "reshape_alias_past_its_storage.py"
HONEST = ["additive_finfo_min", "baddbmm_flat_heads", "einsum_where_torchsoftmax"]
FULL_MARKS, PART_POINTS = 20.0, 10.0  # README: 20 points, 10 a part
WHY = {"submission-too-costly", "tampering"}  # the graph ended the judge, or was refused as forged before it ran


def part_points(report: dict, part: str) -> float:
    return sum(check["points"] for check in report["checks"] if check["part"] == part)


def test_grade_all_with_two_jobs_writes_every_row_and_the_forgers_says_why(tmp_path):
    folder = tmp_path / "class"
    for student in HONEST:
        (folder / student).mkdir(parents=True)
        shutil.copyfile(SUBMISSIONS / "correct" / f"{student}.py", folder / student / "attention.py")
    (folder / "forger").mkdir()
    shutil.copyfile(FORGED, folder / "forger" / "attention.py")
    out = tmp_path / "reports.json"
    done = subprocess.run([*GRADER_WITHOUT_RULES, "grade-all", str(folder), "--jobs", "2", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["student"]: row for row in json.loads(out.read_text(encoding="utf-8"))}
    assert sorted(rows) == sorted(HONEST + ["forger"])
    assert all(rows[student]["score"] == FULL_MARKS for student in HONEST)
    forger = rows["forger"]
    assert part_points(forger, "sdpa") == 0.0 and part_points(forger, "mha") == PART_POINTS
    said = [check for check in forger["checks"] if WHY & set(check["mistakes"])]
    # Part 1 says why; a refusal also shows in the hand-in's integrity line, never in Part 2's checks
    assert any(check["part"] == "sdpa" for check in said), forger["mistakes"]
    assert not any(check["part"] == "mha" for check in said), forger["mistakes"]


AUTOGRADE_WITHOUT_RULES = [sys.executable, "-c", f"{BYPASS_RULES}; import sys; from nbgrader.apps.nbgraderapp "
                           "import main; sys.argv[0] = 'nbgrader'; sys.exit(main())"]


@pytest.mark.e2e
def test_nbgrader_autograde_grades_every_student_and_the_forgers_report_says_why(tmp_path):
    course = Course.create(tmp_path / "course")
    notebooks = {"honest": correct_notebook(course),
                 "forger": cn.answered(course.release, cn.answers_from_python(FORGED))}
    for student, notebook in notebooks.items():
        course.submitted(student).parent.mkdir(parents=True)
        nbformat.write(notebook, course.submitted(student))
    done = subprocess.run([*AUTOGRADE_WITHOUT_RULES, "autograde", ASSIGNMENT, "--create",
                           f"--CourseDirectory.root={course.root}"], cwd=ROOT, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert course.total("honest") == FULL_MARKS
    forger = course.report("forger")
    assert part_points(forger, "sdpa") == 0.0 and course.total("forger") == PART_POINTS
    assert WHY & set(forger["mistakes"]), forger["mistakes"]
