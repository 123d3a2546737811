"""Does `make demo` end by saying which feedback page to open, and with the class summary?"""
from __future__ import annotations

import pytest

from grader import demo
from grader.build.config import ROOT
from grader.checks import Check, Outcome
from grader.demo.classes import ATTENTION, KV_CACHE, Student
from grader.report.json_report import build_report

pytestmark = pytest.mark.unit


def row(student: Student, mistakes: list[str], assignment: str = "attention", part: str = "sdpa") -> dict:
    check = Check(f"{part}.values", part, 2.0, "hidden", "值", "values", lambda ctx: None)
    report = build_report([(check, Outcome(not mistakes, "错。", "Wrong.", mistakes))])
    return {"assignment": assignment, "student": student, "score": report["score"], "max_score": 2.0,
            "mistakes": report["mistakes"], "report": report, "feedback": True}


@pytest.mark.parametrize("lang, heading", [("zh", "最常见的错误"), ("en", "Most frequent mistakes")])
def test_the_demo_points_at_a_page_worth_opening_and_prints_the_class_summary(lang, heading, capsys):
    correct, mistaken = ATTENTION[0], ATTENTION[1]
    run = demo.Demo(course=ROOT / "demo", rows=[row(correct, []), row(mistaken, ["mask-diagonal"])], lang=lang,
                    classes={"attention": ATTENTION})
    demo.print_summary_and_pointers(run)
    said = capsys.readouterr().out
    assert "Class summary of attention" in said and heading in said and "mask-diagonal" in said
    assert f"demo/feedback/{mistaken.id}/attention/attention.html ({mistaken.id}: mask-diagonal)" in said


def test_each_assignment_gets_its_own_summary_and_page_to_open(capsys):
    """Both labs in one demo: each class summary counts its own hand-ins, and each points at a page of its own."""
    rows = [row(ATTENTION[1], ["mask-diagonal"]), row(ATTENTION[2], []),
            row(KV_CACHE[3], ["repeat-kv-order"], "kv_cache", "repeat")]
    demo.print_summary_and_pointers(demo.Demo(course=ROOT / "demo", rows=rows, lang="en"))
    said = capsys.readouterr().out
    first, second = said.split("Class summary of kv_cache")
    assert "Class summary of attention" in first and "Submissions: 2" in first and "repeat-kv-order" not in first
    assert "Submissions: 1" in second and "mask-diagonal" not in second
    assert f"demo/feedback/{KV_CACHE[3].id}/kv_cache/kv_cache.html ({KV_CACHE[3].id}: repeat-kv-order)" in second


def test_the_demo_and_grade_all_print_the_class_summary_in_one_default_language(capsys):
    """`make demo` and `grade-all` without --lang: the same language, Chinese, as for every report."""
    from grader.cli import _parser

    assert _parser().parse_args(["demo"]).lang == _parser().parse_args(["grade-all", "submissions"]).lang == "zh"
    run = demo.Demo(course=ROOT / "demo", rows=[row(ATTENTION[1], ["mask-diagonal"])], classes={"attention": ATTENTION})
    demo.print_summary_and_pointers(run)
    assert "提交数: 1" in capsys.readouterr().out
