"""Does `grade-all DIR` grade one row per student id, and name every other hand-in that claims the same id?

Unit tier: the grading itself is replaced by a stub that says which file it was given (tests/grade_all/test_grade_all.py
grades real classes); what is tested here is which file is graded for whom, and what the table and summary say.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from grader.grade_all import folder
from grader.grade_all.discovery import find_submissions
from grader.grade_all.text import class_summary

pytestmark = pytest.mark.unit


def hand_in(path: Path, when: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}', encoding="utf-8")
    os.utime(path, (when, when))
    return path


@pytest.fixture
def two_for_one_id(tmp_path) -> dict[str, Path]:
    return {"older": hand_in(tmp_path / "s1_attention.ipynb", 1_700_000_000),
            "newer": hand_in(tmp_path / "s1" / "Copy of attention.ipynb", 1_700_000_900),
            "other": hand_in(tmp_path / "s2_attention.ipynb", 1_700_000_000)}


def test_two_hand_ins_for_one_id_give_one_row_the_newest_graded(tmp_path, two_for_one_id, monkeypatch):
    """Two files claim `s1` (one directly in DIR, one in DIR/s1/): is there one row for s1, of the newer file,
    listing the other as a conflict, and does the class summary name both?"""
    graded = []

    def stub(path, **_):
        graded.append(Path(path))
        return {"score": 20.0, "max_score": 20.0, "checks": [], "mistakes": [], "advice": []}

    monkeypatch.setattr(folder, "grade_submission", stub)
    assert dict(find_submissions(tmp_path)) == {"s1": two_for_one_id["newer"], "s2": two_for_one_id["other"]}
    reports = folder.grade_class(tmp_path)
    assert [r["student"] for r in reports] == ["s1", "s2"]
    assert sorted(graded) == sorted([two_for_one_id["newer"], two_for_one_id["other"]])
    assert reports[0]["conflicts"] == [str(two_for_one_id["older"])] and "conflicts" not in reports[1]
    for lang, heading in (("en", "Several hand-ins for one id"), ("zh", "同一学号的多份提交")):
        summary = class_summary(reports, lang)
        assert heading in summary and "s1_attention.ipynb" in summary and "Copy of attention.ipynb" in summary


def test_a_conflict_the_lms_collect_recorded_is_in_the_nbgrader_class_summary(tmp_path):
    """zip_collect recorded that two LMS people were collected as student 2026001: does grade-all --nbgrader's class
    summary list that conflict?"""
    from grader.grade_all.nbgrader_mode import add_collect_conflicts
    from grader.nbgrader.earlier_collect import MANIFEST

    manifest = tmp_path / "downloaded" / "attention" / MANIFEST
    manifest.parent.mkdir(parents=True)
    conflict = "hand-ins of 2 different people (1001, 1004) map to student 2026001"
    manifest.write_text(json.dumps({"2026001": {"layout": "moodle", "file": "x", "conflict": conflict},
                                    "2026002": {"layout": "moodle", "file": "y"}}), encoding="utf-8")
    reports = [{"student": s, "submission": f"submitted/{s}/attention/attention.ipynb", "score": 20.0,
                "max_score": 20.0, "checks": [], "mistakes": [], "advice": []} for s in ("2026001", "2026002")]
    add_collect_conflicts(reports, tmp_path, "attention")
    assert [r.get("conflicts") for r in reports] == [[conflict], None]
    assert conflict in class_summary(reports, "en")
