"""Does `release-solutions` refuse to publish the solutions when nothing was handed in, and say so?"""
from __future__ import annotations

import pytest

from grader.build import release_solutions

pytestmark = pytest.mark.unit


def test_nothing_handed_in_is_refused_and_named(tmp_path, capsys):
    """A course with no submitted/ (a fresh clone): refused, exit status 1, the reason and the override named."""
    assert release_solutions.main(assignment="attention", course=str(tmp_path)) == 1
    said = capsys.readouterr()
    assert "refused, nothing was handed in" in said.err and "--force" in said.err
    assert not (tmp_path / "release").exists()


def test_an_empty_submitted_folder_is_nothing_handed_in(tmp_path, capsys):
    (tmp_path / "submitted" / "alice" / "other-assignment").mkdir(parents=True)
    assert release_solutions.main(assignment="attention", course=str(tmp_path)) == 1
    assert "nothing was handed in" in capsys.readouterr().err


def test_force_releases_with_nothing_handed_in(tmp_path, capsys):
    assert release_solutions.main(assignment="attention", force=True, course=str(tmp_path)) == 0
    said = capsys.readouterr().out
    assert "--force: releasing although nothing was handed in" in said
    assert (tmp_path / "release" / "attention" / "solutions" / "attention.ipynb").is_file()
