"""grade-all: one row per submission whatever it does, results independent of --jobs, the class
summary, the JSON list; and the nbgrader path (grade in parallel into the report cache, then one
`nbgrader autograde`), whose gradebook must hold exactly grade-all's scores.

No timing assertions here: benchmarks/grading_speed.py measures speed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support.paths import REFERENCE, ROOT, SUBMISSIONS
from support import colab_notebooks as cn
from grader.exercises.attention import MAX_SCORE
from grader.process import REPORT_CACHE_ENV, nbgrader_env, open_gradebook
from grader.grade_all.discovery import find_submissions
from grader.grade_all.folder import grade_class
from grader.grade_all.options import parse_shard
from grader.grade_all.parallel import in_shard
from grader.grade_all.text import class_summary
from support.nbgrader_course import Course, colab_cases, mutant_notebook

pytestmark = pytest.mark.sandbox

MUTANTS = SUBMISSIONS / "mutants"
HOSTILE = SUBMISSIONS / "hostile"

# student -> submission file; the layout DIR/<student>/<file> (one student's file directly in DIR below)
CLASS = {
    "alice": REFERENCE,
    "bob": MUTANTS / "mask-diagonal.py",
    "carol": MUTANTS / "bare-matmul.py",
    "dave": MUTANTS / "mask-diagonal__2.py",
    "erin": HOSTILE / "exit_in_function.py",
    "frank": HOSTILE / "patched_comparisons.py",
    "grace": HOSTILE / "syntax_error.py",
}
BROKEN = "mallory"  # a notebook that is not JSON: refused with a plain-language reason


@pytest.fixture(autouse=True)
def no_report_cache(monkeypatch):
    """No report here is served from the session's cache: each class is graded here, and only the CLI's
    third grading reads what the second one stored (`class_cache`)."""
    monkeypatch.delenv("ATTENTION_KIT_REPORT_CACHE", raising=False)


@pytest.fixture(scope="module")
def class_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("class-reports")


@pytest.fixture(scope="module")
def class_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("class")
    for student, path in CLASS.items():
        target = root / student / "work" / path.name
        target.parent.mkdir(parents=True)
        target.write_bytes(path.read_bytes())
    release = nbformat.read(ROOT / "release" / "attention" / "attention.ipynb", as_version=4)
    cn.write(cn.answered(release, cn.answers_from_python(MUTANTS / "missing-scale.py")), root / "heidi.ipynb")
    (root / BROKEN).mkdir()
    (root / BROKEN / "attention.ipynb").write_text('{"cells": [ this is not json', encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def by_jobs(class_dir, class_cache) -> dict[int, list[dict]]:
    """The class graded twice from scratch, with one job and with two; the second fills `class_cache`."""
    return {1: grade_class(class_dir, jobs=1), 2: grade_class(class_dir, jobs=2, cache=class_cache)}


def essence(report: dict) -> tuple:
    """Everything a report says about the student, check by check."""
    return (report["student"], report["score"], report["max_score"], report["mistakes"], report.get("error"),
            [(c["id"], c["passed"], c["points"], c["message_en"], c["mistakes"]) for c in report["checks"]])


def test_finds_one_submission_per_student_in_both_layouts(class_dir):
    found = dict(find_submissions(class_dir))
    assert sorted(found) == sorted([*CLASS, "heidi", BROKEN])
    assert found["heidi"] == class_dir / "heidi.ipynb"
    assert found["alice"].name == REFERENCE.name


def test_results_do_not_depend_on_jobs(by_jobs):
    one, two = by_jobs[1], by_jobs[2]
    assert [essence(r) for r in one] == [essence(r) for r in two]


def test_every_submission_gets_a_row_even_when_it_crashes(by_jobs):
    reports = {r["student"]: r for r in by_jobs[2]}
    assert sorted(reports) == sorted([*CLASS, "heidi", BROKEN])
    broken = reports[BROKEN]
    assert broken["score"] == 0.0 and broken["max_score"] == MAX_SCORE and broken["mistakes"] == ["not-a-notebook"]
    assert broken["refused"] == "not-a-notebook" and "error" not in broken
    assert broken["submission"].endswith("attention.ipynb")
    assert reports["alice"]["score"] == MAX_SCORE and not reports["alice"]["mistakes"]
    assert "mask-diagonal" in reports["bob"]["mistakes"] and "bare-matmul" in reports["carol"]["mistakes"]
    assert "missing-scale" in reports["heidi"]["mistakes"]
    assert "tampering" in reports["erin"]["mistakes"] and "syntax-error" in reports["grace"]["mistakes"]
    graded_checks = [c["id"] for c in reports["alice"]["checks"] if c["part"] in ("sdpa", "mha")]
    assert [c["id"] for c in broken["checks"]] == graded_checks  # refused: every check a row, none run
    for student in (*CLASS, "heidi"):  # hostile or not, every check has its row
        assert len(reports[student]["checks"]) == len(reports["alice"]["checks"]), student


def test_summary_shows_the_distribution_and_what_to_reteach(by_jobs):
    reports = by_jobs[1]
    text = class_summary(reports, "en")
    assert f"Submissions: {len(reports)}" in text
    assert "Score distribution:" in text and "[  16,   20]" in text
    mistakes = text.split("Most frequent mistakes (worth re-teaching):")[1].split("Checks failed most often:")[0]
    first = mistakes.strip().splitlines()[0].split()
    assert first[0] == "2" and first[2] == "mask-diagonal", mistakes  # bob and dave: the class's top mistake
    assert "Mask includes the diagonal" in mistakes or "diagonal" in mistakes.lower()
    assert "bare-matmul" in mistakes and "tampering" in mistakes
    assert f"Not graded (hand-in refused) (1):\n  {BROKEN}: Not a readable notebook or Python file" in text
    chinese = class_summary(reports, "zh")
    assert "最常见的错误（建议重讲）" in chinese and "分数分布" in chinese


def test_cli_writes_a_json_list_with_submission_and_student(class_dir, by_jobs, class_cache, tmp_path):
    """The CLI around grade_class: its reports (read from the cache the second grading filled) as a JSON list."""
    out = tmp_path / "reports.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(class_dir), "--jobs", "2", "--json",
                           str(out), "--lang", "en"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, REPORT_CACHE_ENV: str(class_cache)})
    assert done.returncode == 0, done.stderr
    reports = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(reports, list)
    assert [(r["student"], Path(r["submission"]).name) for r in reports] == \
        [(r["student"], Path(r["submission"]).name) for r in by_jobs[1]]
    assert [essence(r) for r in reports] == [essence(r) for r in by_jobs[1]]
    for report in reports:
        assert {"score", "max_score", "checks", "mistakes", "submission", "student"} <= set(report)
        assert f"{report['student']} " in done.stdout
    assert "Most frequent mistakes" in done.stdout


@pytest.mark.unit
def test_shards_partition_the_class():
    students = [f"student{n}" for n in range(200)]
    shares = [[s for s in students if in_shard(s, (k, 3))] for k in (1, 2, 3)]
    assert sorted(sum(shares, [])) == sorted(students)
    assert all(len(share) > 40 for share in shares)
    assert parse_shard("2/3") == (2, 3)
    for bad, reason in (("0/3", "K must be between 1 and N"), ("4/3", "K must be between 1 and N"),
                        ("x", "--shard wants K/N, got 'x'"), ("1/2/3", "--shard wants K/N, got '1/2/3'"),
                        ("0/0", "K must be between 1 and N")):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(reason)):
            parse_shard(bad)


# --- the nbgrader path -----------------------------------------------------------------------------


def nbgrader_class(course: Course) -> dict[str, nbformat.NotebookNode]:
    """Colab-shaped notebooks (repairs needed), mutants and a hostile one, as submitted/ holds them."""
    cases = colab_cases(course)
    chosen = {name: cases[name] for name in ("colab40", "stripped", "deleted", "reordered", "forged")}
    chosen["missing-scale"] = mutant_notebook(course, "missing-scale")
    chosen["bare-matmul"] = cn.colab_saved(mutant_notebook(course, "bare-matmul"), seed="bm")
    chosen["exits"] = cn.answered(course.release, cn.answers_from_python(HOSTILE / "exit_in_function.py"))
    return chosen


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """A course whose class was graded with `grade-all COURSE --nbgrader attention --jobs 2`."""
    course = Course.create(tmp_path_factory.mktemp("course"))
    students = nbgrader_class(course)
    for student, nb in students.items():
        cn.write(nb, course.submitted(student))
    out = course.root / "reports.json"
    env = {k: v for k, v in nbgrader_env().items() if k != REPORT_CACHE_ENV}  # module scope: before no_report_cache
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(course.root), "--nbgrader", "attention",
                           "--jobs", "2", "--json", str(out), "--lang", "en"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    reports = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    return course, students, done, {r["student"]: r for r in reports}


def gradebook_totals(db_url: str, students) -> dict[str, float | None]:
    from nbgrader.api import MissingEntry

    totals = {}
    with open_gradebook(db_url, "attention-kit") as gradebook:
        for student in students:
            try:
                totals[student] = gradebook.find_submission("attention", student).score
            except MissingEntry:
                totals[student] = None
    return totals


@pytest.mark.e2e
def test_nbgrader_gradebook_holds_grade_alls_scores(graded_course):
    course, students, done, reports = graded_course
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(reports) == sorted(students)
    totals = gradebook_totals(f"sqlite:///{course.root / 'gradebook.db'}", students)
    assert totals == {student: reports[student]["score"] for student in students}
    assert all(r["gradebook_score"] == r["score"] for r in reports.values())
    assert reports["colab40"]["score"] == MAX_SCORE and "missing-scale" in reports["missing-scale"]["mistakes"]
    assert reports["forged"]["score"] < MAX_SCORE  # forged outputs and a bonus cell earn nothing
    # the nbgrader run found every verdict in the cache: it graded nothing itself
    assert "not found in the cache" not in done.stderr
    cache = course.root / "autograded" / ".attention-kit-report-cache"
    # content-addressed: students whose graded code and layout are the same (a reordered copy of a correct
    # notebook, say) share one report; a verified fix's regrade (one edited copy here) is cached like any grading
    regrades = sum(len(r.get("fixes", [])) for r in reports.values())
    assert 0 < len(list(cache.glob("*.json"))) <= len(students) + regrades
    for student in students:
        assert course.autograded(student).is_file()
        assert f"{student} " in done.stdout


@pytest.mark.e2e
def test_nbgrader_scores_equal_grader_grade(graded_course, tmp_path):
    """`grader grade` on the submitted file gives the same score, except where autograde had to put
    provided cells back (`deleted` lost ModelArgs): there on the autograded notebook, as docs/instructors/grading.md says."""
    course, students, _, reports = graded_course
    plain = {r["student"]: r for r in grade_class(course.root / "submitted", jobs=2)}
    unrepaired = [s for s in students if s != "deleted"]
    assert {s: plain[s]["score"] for s in unrepaired} == {s: reports[s]["score"] for s in unrepaired}
    assert {s: plain[s]["mistakes"] for s in unrepaired} == {s: reports[s]["mistakes"] for s in unrepaired}
    for student in ("deleted", "stripped"):
        (tmp_path / f"{student}.ipynb").write_bytes(course.autograded(student).read_bytes())
    autograded = {r["student"]: r["score"] for r in grade_class(tmp_path, jobs=2)}
    assert autograded == {s: reports[s]["score"] for s in ("deleted", "stripped")}


@pytest.mark.e2e
def test_nbgrader_feedback_works_after_grade_all(graded_course):
    course, students, _, _ = graded_course
    course.nbgrader("generate_feedback", "attention")
    for student in students:
        page = course.feedback(student).read_text(encoding="utf-8")
        assert "BEGIN HIDDEN TESTS" not in page


@pytest.mark.e2e
def test_nbgrader_rerun_reuses_the_cache_and_keeps_the_gradebook(graded_course):
    course, students, _, reports = graded_course
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(course.root), "--nbgrader", "attention",
                           "--jobs", "2", "--force", "--lang", "en"],
                          cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "not found in the cache" not in done.stderr
    totals = gradebook_totals(f"sqlite:///{course.root / 'gradebook.db'}", students)
    assert totals == {student: reports[student]["score"] for student in students}
