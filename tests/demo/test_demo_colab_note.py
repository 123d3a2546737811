"""Does only `grader build` shout about the placeholder Colab repository, while the demo notes it in one line?"""
from __future__ import annotations

import pytest

from grader import build, demo
from grader.build.config import ROOT

pytestmark = pytest.mark.unit


@pytest.fixture
def placeholder_repo_and_no_rebuild(monkeypatch):
    """The Colab repository left as shipped; the regeneration itself replaced (it is tested in tests/publishing)."""
    monkeypatch.setattr(build, "COLAB_REPO", build.COLAB_PLACEHOLDER_REPO)
    regenerated = []
    monkeypatch.setattr(build, "regenerate", lambda *, check=False: regenerated.append(check) or 0)
    return regenerated


def test_the_build_verb_warns_with_the_banner(placeholder_repo_and_no_rebuild, capsys):
    assert build.main() == 0
    said = capsys.readouterr()
    assert "!!!" in said.err and "COLAB_REPO is still the placeholder" in said.err
    assert placeholder_repo_and_no_rebuild == [False]


def test_the_demo_notes_the_placeholder_in_one_line_without_the_banner(placeholder_repo_and_no_rebuild, capsys):
    demo.run_build(demo.Demo(course=ROOT / "demo"))
    said = capsys.readouterr()
    assert "!" not in said.err + said.out
    notes = [line for line in said.out.splitlines() if "COLAB_REPO" in line]
    assert len(notes) == 1 and notes[0].startswith("demo: ") and "placeholder" in notes[0], said.out
    assert placeholder_repo_and_no_rebuild == [False]


def test_the_demo_says_nothing_of_a_repository_that_is_set(placeholder_repo_and_no_rebuild, monkeypatch, capsys):
    monkeypatch.setattr(build, "COLAB_REPO", "a-course/attention-release")
    demo.run_build(demo.Demo(course=ROOT / "demo"))
    assert "COLAB_REPO" not in capsys.readouterr().out
