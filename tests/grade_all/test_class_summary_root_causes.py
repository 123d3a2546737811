"""Does the class summary count root causes: no check that was not run, fixes by the lines they change?"""
from __future__ import annotations

import pytest

from grader.checks import Check, Outcome
from grader.grade_all.text import class_summary
from grader.report.json_report import build_report

pytestmark = pytest.mark.unit


def spec(check_id: str) -> Check:
    return Check(check_id, "mha", 1.0, "hidden", "标题", "title", lambda ctx: None)


def student(name: str, results: list[tuple[str, Outcome]], fixes: list[dict] = ()) -> dict:
    report = build_report([(spec(check_id), outcome) for check_id, outcome in results])
    return {**report, "student": name, "fixes": list(fixes)}


def test_checks_not_checked_are_left_out_of_the_checks_failed_most_often():
    """mha.values failed for a real reason; mha.mask_buffer only said "Not checked: needs correct values"."""
    cascade = Outcome(False, "未检查：需要数值正确（见 mha.values）。", "Not checked: needs correct values (see mha.values).",
                      cause="cascade")
    reports = [student(s, [("mha.values", Outcome(False, "错。", "Wrong.", ["head-split"])), ("mha.mask_buffer", cascade)])
               for s in ("a", "b")]
    assert reports[0]["checks"][1]["not_checked"] is True and "not_checked" not in reports[0]["checks"][0]
    failed = class_summary(reports, "en").split("Checks failed most often:")[1]
    assert "mha.values" in failed and "mha.mask_buffer" not in failed


def test_a_two_line_fix_is_not_counted_as_a_one_line_fix():
    one = {"mistake": "mask-diagonal", "points": 2.0, "edits": [{"line": 3}]}
    two = {"mistake": "mask-device", "points": 1.0, "edits": [{"line": 3}, {"line": 9}]}
    reports = [student("a", [], [one, two]), student("b", [], [two])]
    text = class_summary(reports, "en")
    one_line = text.split("Verified one-line fixes shown")[1].split("Verified fixes of several lines")[0]
    several = text.split("Verified fixes of several lines shown")[1]
    assert "mask-diagonal" in one_line and "mask-device" not in one_line
    assert several.splitlines()[1].split()[:4] == ["2", "100%", "mask-device", "+2"]
    assert "已验证的多行修正" in class_summary(reports, "zh")


def test_a_check_that_held_under_a_failed_gate_is_left_out_of_the_checks_failed_most_often():
    """mha.interface held but a crash failed the part's gate: not `passed`, yet no root cause to re-teach."""
    gate = Check("mha.computes_attention", "mha", 0.0, "hidden", "标题", "title", lambda ctx: None, gate=True)
    reports = [{**build_report([(gate, Outcome(False, "出错。", "Error.")),
                                (spec("mha.interface"), Outcome(True, "符合接口。", "Matches."))]),
                "student": s, "fixes": []} for s in ("a", "b")]
    assert reports[0]["checks"][1]["not_counted"] is True
    failed = class_summary(reports, "en").split("Checks failed most often:")[1]
    assert "mha.computes_attention" in failed and "mha.interface" not in failed
