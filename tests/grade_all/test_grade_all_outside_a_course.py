"""Does `grade-all --nbgrader` run on a folder that is no nbgrader course say so, and leave nothing behind?"""
from __future__ import annotations

import pytest

from grader.cli import main
from grader.errors import GradebookDisagrees, NbgraderFailed

pytestmark = pytest.mark.e2e  # nbgrader's application, in this process


def test_a_folder_without_a_gradebook_is_no_course_and_gets_none(tmp_path, capsys):
    (tmp_path / "submitted" / "alice" / "attention").mkdir(parents=True)
    assert main(["grade-all", str(tmp_path), "--nbgrader", "attention"]) == 3
    said = capsys.readouterr().err
    assert "is not a recorded nbgrader course" in said and "has no assignment" not in said
    assert not (tmp_path / "gradebook.db").exists()


def test_a_failed_nbgrader_command_and_a_disagreeing_gradebook_exit_differently():
    """1 means "the gradebook holds other scores"; nbgrader failing (its own status, often 1) is 4."""
    assert NbgraderFailed("nbgrader autograde failed (exit status 1)", 1).exit_code == 4
    assert GradebookDisagrees("differs").exit_code == 1
