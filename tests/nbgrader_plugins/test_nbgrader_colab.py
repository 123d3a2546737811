"""Do notebooks in every state Colab returns them get collected, graded and given feedback right by real nbgrader runs?

One class (tests/support/nbgrader_course.py `shared_class`) goes through `nbgrader zip_collect`,
`nbgrader autograde` and `nbgrader generate_feedback` once per session, with the repo's
nbgrader_config.py: a Colab-saved nbformat 4.0 notebook, one with nbgrader's metadata stripped,
cells deleted, duplicated, reordered, split, the answer moved into a test cell, edited grade
flags, a mask mistake, and downloads zip_collect must leave out.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from grader.build.config import ROOT
from grader.exercises.attention import MAX_SCORE, PART

SDPA_TESTS, MHA_TESTS = PART["sdpa"].tests_cell, PART["mha"].tests_cell
from grader.process import nbgrader_env
from grader.nbgrader.hide_hidden_tests import remove_hidden_blocks
from grader.handin.source import load_submission, read_code_cells, submission_from_cells
from support.nbgrader_course import COLAB_FILE_NAMES, LEFT_OUT, shared_class

pytestmark = pytest.mark.e2e
CORRECT = [student for student in COLAB_FILE_NAMES if student not in ("mask-diag.1", "gutted", "forged")]
PROVIDED_CELLS_DELETED = ["deleted", "gutted"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return shared_class(tmp_path_factory)


@pytest.fixture(scope="module")
def cli_reports(run, tmp_path_factory):
    """`python -m grader grade-all` on the collected notebooks: student -> report."""
    out = tmp_path_factory.mktemp("reports") / "grade-all.json"  # not in the course: that must hold only what nbgrader writes
    command = [sys.executable, "-m", "grader", "grade-all", str(run.course.root / "submitted"), "--jobs", "2",
               "--json", str(out)]
    subprocess.run(command, cwd=ROOT, env=nbgrader_env(), check=True, capture_output=True, timeout=900)
    return {report["student"]: report for report in json.loads(out.read_text(encoding="utf-8"))}


def test_every_colab_name_is_collected_for_its_student(run):
    """Does zip_collect put every student's download, whatever Colab named it, at submitted/<id>/attention/attention.ipynb?"""
    for student in COLAB_FILE_NAMES:
        assert run.course.submitted(student).is_file(), student
    collected = sorted(p.parts[-3] for p in (run.course.root / "submitted").glob("*/attention/attention.ipynb"))
    assert collected == sorted(COLAB_FILE_NAMES)


def test_files_zip_collect_leaves_out_are_named_with_the_reason(run):
    """Is each file that could not be collected (no id, not a notebook, an older copy) named in the output, and the
    summary's count of what needs a look kept apart from the routine older copy?"""
    for name, reason in LEFT_OUT.items():
        lines = [line for line in run.zip_collect.splitlines() if f"Not collected: {name!r}" in line]
        assert lines and reason in lines[0], name
    assert "2 file(s) left out" in run.zip_collect and "1 routine file(s) not collected" in run.zip_collect


def test_every_case_is_autograded_without_manual_grading(run):
    """Does every Colab case with correct code get full marks, none left 'needs manual grading'?"""
    scores = run.course.scores()
    for student in COLAB_FILE_NAMES:
        assert set(scores[student]) == {"sdpa_tests", "mha_tests"}, student
        assert not any(needs for _, needs in scores[student].values()), student
    for student in CORRECT:
        assert run.course.total(student) == MAX_SCORE, (student, scores[student])


def test_a_mask_mistake_is_diagnosed_and_scored_below_full(run):
    """Is the mask-diagonal student's Part 1 scored down and the mistake in the stored report?"""
    scores = run.course.scores()["mask-diag.1"]
    assert scores[SDPA_TESTS][0] < PART["sdpa"].points and scores[MHA_TESTS][0] == PART["mha"].points
    assert "mask-diagonal" in run.course.report("mask-diag.1")["mistakes"]


def test_a_gutted_notebook_is_graded_on_what_is_left(run):
    """With every code cell deleted but the MHA answer, is Part 1 scored 0 (not implemented) and Part 2 in full?"""
    scores = run.course.scores()["gutted"]
    assert scores[SDPA_TESTS][0] == 0 and scores[MHA_TESTS][0] == PART["mha"].points
    assert "not-implemented" in run.course.report("gutted")["mistakes"]


def test_forged_outputs_and_grade_cells_earn_nothing(run):
    """Do full marks written into the outputs and a 50-point grade cell of the student's own change nothing?"""
    scores = run.course.scores()
    assert set(scores["forged"]) == {"sdpa_tests", "mha_tests"}
    assert run.course.total("forged") == run.course.total("mask-diag.1") < 20


def test_autograde_warns_only_about_cells_a_student_changed(run):
    """Is autograde's log free of SQLAlchemy warnings, and does "checksum has changed" name only a cell the student
    edited (the split imports cell), never an untouched cell of the other ten notebooks?"""
    assert "SAWarning" not in run.autograde
    changed: dict[str, list[str]] = {}
    student = None
    for line in run.autograde.splitlines():
        sanitizing = re.search(r"Sanitizing .*/submitted/([^/]+)/", line)
        student = sanitizing.group(1) if sanitizing else student
        checksum = re.search(r"Attribute 'checksum' for cell (\S+) has changed", line)
        if checksum:
            changed.setdefault(student, []).append(checksum.group(1))
    assert changed == {"split": ["imports"]}


def test_autograde_scores_equal_the_grader_cli(run, cli_reports):
    """Are the scores nbgrader autograde stored equal to `python -m grader grade-all` on the same submitted notebooks?

    Except where the student deleted a provided cell: autograde puts it back (a locked cell, as
    nbgrader does), which the grader CLI on the raw notebook cannot; that student is compared in
    `test_a_notebook_missing_provided_cells_matches_the_grader_on_the_repaired_notebook`.
    """
    scores = run.course.scores()
    for student in COLAB_FILE_NAMES:
        if student in PROVIDED_CELLS_DELETED:
            continue
        report = cli_reports[student]
        for grade_id, part in (("sdpa_tests", "sdpa"), ("mha_tests", "mha")):
            expected = sum(c["points"] for c in report["checks"] if c["part"] == part)
            assert scores[student][grade_id][0] == pytest.approx(expected), (student, part)
        assert run.course.report(student)["mistakes"] == report["mistakes"], student


def test_a_notebook_missing_provided_cells_matches_the_grader_on_the_repaired_notebook(run):
    """With the provided imports and ModelArgs cells deleted, does autograde equal the grader on the autograded
    notebook (the same code cells, provided cells restored)?"""
    for student in PROVIDED_CELLS_DELETED:
        command = [sys.executable, "-m", "grader", "grade", str(run.course.autograded(student)), "--json"]
        done = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), check=True, capture_output=True, text=True)
        assert json.loads(done.stdout)["score"] == run.course.total(student)


@pytest.mark.parametrize("student", ["colab40", "stripped", "reordered", "gradeflag", "mask-diag.1", "forged"])
def test_autograde_grades_the_code_grader_grade_reads(run, student):
    """Where no cell had to be put back, does autograde grade exactly the text `grader grade` reads from the submitted
    file (so the two agree by construction, and a report cached by `grade-all` serves autograde too)?"""
    autograded = [remove_hidden_blocks(cell) for cell in read_code_cells(run.course.autograded(student))]
    assert submission_from_cells(autograded, "x").source == load_submission(run.course.submitted(student)).source


def test_one_notebook_matches_the_grade_command(run):
    """Does `python -m grader grade PATH --json` on a submitted notebook give the score autograde stored?"""
    command = [sys.executable, "-m", "grader", "grade", str(run.course.submitted("mask-diag.1")), "--json"]
    done = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), check=True, capture_output=True, text=True)
    assert json.loads(done.stdout)["score"] == run.course.total("mask-diag.1")


@pytest.mark.parametrize("student", ["moved", "split", "duplicated", "reordered"])
def test_no_student_code_is_lost(run, student):
    """Is every line of the student's code cells still in the autograded notebook after the repair?"""
    submitted = "\n".join(read_code_cells(run.course.submitted(student)))
    autograded = "\n".join(read_code_cells(run.course.autograded(student)))
    missing = [line for line in submitted.splitlines() if line.strip() and line not in autograded]
    assert not missing, missing[:5]


def test_hidden_tests_are_back_at_autograde(run):
    """Did OverwriteCells put the hidden tests back into both test cells, also where the student deleted them?"""
    for student in ("colab40", "deleted", "moved"):
        code = "\n".join(read_code_cells(run.course.autograded(student)))
        assert code.count("### BEGIN HIDDEN TESTS") == 2, student


def test_every_student_gets_a_feedback_page_without_hidden_code(run):
    """Has every student a feedback page, none showing the hidden test code?"""
    for student in COLAB_FILE_NAMES:
        page = run.course.feedback(student).read_text(encoding="utf-8")
        assert "HIDDEN TESTS" not in page and "grader.hidden" not in page and "score_part" not in page, student


def test_a_failing_students_feedback_shows_verdicts_diagnosis_and_picture(run):
    """Does the mask-diagonal student's page show the score, each verdict, the zh/en diagnosis and the weights picture?"""
    page = run.course.feedback("mask-diag.1").read_text(encoding="utf-8")
    score = run.course.total("mask-diag.1")
    assert f"Score: {score:.1f} / {MAX_SCORE:.1f}" in page.replace("&nbsp;", " ") or f"{score:g} / {MAX_SCORE:g}" in page
    assert "sdpa.causal_zeros" in page and "✗" in page
    assert "对角线被遮蔽" in page and "Diagonal masked too" in page
    assert page.count("data:image/png;base64") >= 1 and "your attention weights" in page
