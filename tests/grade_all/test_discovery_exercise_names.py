"""Whose is a file directly in a grade-all folder, when its name is an exercise's own: `kv_cache.ipynb` is not
student `kv`'s, while `alice_kv_cache.ipynb` is Alice's?"""
from __future__ import annotations

import pytest

from grader.grade_all.discovery import find_submissions

pytestmark = pytest.mark.unit


def test_a_file_named_as_an_exercise_is_a_student_of_its_own_name(tmp_path):
    for name in ("kv_cache.ipynb", "kv_cache (1).ipynb", "alice_kv_cache.ipynb", "bob_Copy of kv_cache.py",
                 "attention.ipynb", "carol_attention.ipynb"):
        (tmp_path / name).write_text("", encoding="utf-8")
    students = sorted(student for student, _ in find_submissions(tmp_path))
    assert students == ["alice", "attention", "bob", "carol", "kv_cache", "kv_cache (1)"]
