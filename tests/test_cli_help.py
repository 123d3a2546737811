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
