"""Does `make demo` end by saying which feedback page to open, and with the class summary?"""
from __future__ import annotations

import pytest

from grader import demo
from grader.build.config import ROOT
from grader.checks import Check, Outcome
from grader.report.json_report import build_report

pytestmark = pytest.mark.unit


def row(student: demo.Student, mistakes: list[str]) -> dict:
    check = Check("sdpa.values", "sdpa", 2.0, "hidden", "值", "values", lambda ctx: None)
    report = build_report([(check, Outcome(not mistakes, "错。", "Wrong.", mistakes))])
    return {"student": student, "score": report["score"], "max_score": 2.0, "mistakes": report["mistakes"],
            "report": report, "feedback": True}


@pytest.mark.parametrize("lang, heading", [("zh", "最常见的错误"), ("en", "Most frequent mistakes")])
def test_the_demo_points_at_a_page_worth_opening_and_prints_the_class_summary(lang, heading, capsys):
    correct, mistaken = demo.CLASS[0], demo.CLASS[1]
    run = demo.Demo(course=ROOT / "demo", rows=[row(correct, []), row(mistaken, ["mask-diagonal"])], lang=lang)
    demo.print_summary_and_pointers(run)
    said = capsys.readouterr().out
    assert "Class summary" in said and heading in said and "mask-diagonal" in said
    assert f"demo/feedback/{mistaken.id}/attention/attention.html ({mistaken.id}: mask-diagonal)" in said


def test_the_demo_and_grade_all_print_the_class_summary_in_one_default_language(capsys):
    """`make demo` and `grade-all` without --lang: the same language, Chinese, as for every report."""
    from grader.cli import _parser

    assert _parser().parse_args(["demo"]).lang == _parser().parse_args(["grade-all", "submissions"]).lang == "zh"
    run = demo.Demo(course=ROOT / "demo", rows=[row(demo.CLASS[1], ["mask-diagonal"])])
    demo.print_summary_and_pointers(run)
    assert "提交数: 1" in capsys.readouterr().out
