"""Does `--help` describe every argument of every verb?"""
import argparse

import pytest

from grader.cli import VERBS, _parser

pytestmark = pytest.mark.unit


def verb_parsers() -> dict[str, argparse.ArgumentParser]:
    subparsers = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_argument_has_a_help_text(verb):
    undescribed = [action.dest for action in verb_parsers()[verb]._actions
                   if not isinstance(action, argparse._HelpAction) and not action.help]
    assert undescribed == [], f"`{verb} --help` leaves {undescribed} undescribed"


def test_no_help_points_at_a_file_the_repository_lacks():
    """`grade --help` once sent users to DESIGN.md, which is not in the repository: every help text names only
    what a clone has."""
    texts = [action.help or "" for parser in verb_parsers().values() for action in parser._actions]
    assert not [text for text in texts if "DESIGN" in text]


def test_grade_on_a_folder_says_to_use_grade_all(tmp_path, capsys):
    from grader.cli import main

    assert main(["grade", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "is a folder" in said and "grade-all" in said and "no such file" not in said
