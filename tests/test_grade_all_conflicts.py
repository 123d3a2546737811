"""Does `grade-all DIR` grade one row per student id, and name every other hand-in that claims the same id?

Unit tier: the grading itself is replaced by a stub that says which file it was given (tests/test_grade_all.py
grades real classes); what is tested here is which file is graded for whom, and what the table and summary say.
"""
from __future__ import annotations

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
