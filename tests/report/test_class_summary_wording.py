"""Does the class summary say what its numbers are, and what a run without every sandbox layer lacked?"""
from __future__ import annotations

import pytest

from grader.catalog import catalog
from grader.checks import Check, Outcome
from grader.grade_all.text import class_summary
from grader.report.json_report import build_report

pytestmark = pytest.mark.unit

NOT_ROOT = ["uid drop (not root)", "process-count limit (needs a uid of its own)", "memory cgroup (not root)"]


def student(name: str, fixes: list[dict] = (), isolation_missing: list[str] = ()) -> dict:
    check = Check("mha.values", "mha", 10.0, "hidden", "值", "values", lambda ctx: None)
    report = build_report([(check, Outcome(False, "错。", "Wrong.", ["bare-matmul"]))])
    return {**report, "student": name, "fixes": list(fixes),
            **({"isolation_missing": list(isolation_missing)} if isolation_missing else {})}


@pytest.mark.parametrize("lang, header", [("en", "points in total"), ("zh", "合计可多得的分数")])
def test_the_points_column_says_it_sums_the_students(lang, header):
    """Four students shown a 10-point fix: the column's +40 is a total, and its header says so."""
    fix = {"mistake": "bare-matmul", "points": 10.0, "edits": [{"line": 3}]}
    text = class_summary([student(name, [fix]) for name in "abcd"], lang)
    lines = text.splitlines()
    heading = next(n for n, line in enumerate(lines) if header in line)
    assert lines[heading + 1].split()[:4] == ["4", "100%", "bare-matmul", "+40"]


def test_the_bare_matmul_title_names_the_missing_prefix():
    entry = catalog()["bare-matmul"]
    assert entry["title_en"] == "matmul without the torch. prefix"
    assert entry["title_zh"] == "matmul 前缺少 torch. 前缀"


@pytest.mark.parametrize("lang, heading", [("en", "Graded with incomplete isolation"), ("zh", "隔离不完整")])
def test_incomplete_isolation_names_the_missing_layers_before_the_students(lang, heading):
    reports = [student("ada", isolation_missing=NOT_ROOT), student("bo.li", isolation_missing=NOT_ROOT),
               student("chen", isolation_missing=["memory cgroup (not root)"]), student("dara")]
    lines = [line for line in class_summary(reports, lang).splitlines() if line.startswith(heading)]
    assert lines == [f"{heading} (uid drop (not root); process-count limit (needs a uid of its own); "
                     "memory cgroup (not root)): ada, bo.li",
                     f"{heading} (memory cgroup (not root)): chen"]


def test_a_fully_isolated_class_has_no_isolation_line():
    assert "isolation" not in class_summary([student("ada"), student("bo.li")], "en")
