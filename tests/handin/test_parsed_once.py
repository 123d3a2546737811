"""A hand-in's extracted module is parsed once in the parent: the rules, the static pass and the fix candidates
all read the same tree (grader.handin.syntax_tree.parsed), and none of them changes it."""
import ast

import pytest

from grader import rules, static_pass
from grader.fixes.candidates import candidates
from grader.fixes.rewrites import REWRITES
from grader.handin import syntax_tree
from grader.handin.source import load_submission
from support.paths import SUBMISSIONS
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

HAND_IN = SUBMISSIONS / "mutants" / "missing-scale.py"


def test_the_rules_the_static_pass_and_the_fix_candidates_share_one_parse(monkeypatch):
    source = load_submission(HAND_IN).source + "\n# this test's own text, so no earlier parse is reused\n"
    parses = []
    monkeypatch.setattr(syntax_tree, "parse", lambda text, *args: parses.append(text) or ast.parse(text))
    syntax_tree.parsed.cache_clear()
    rules.violations(source, EXERCISE)
    static_pass.analyse(source)
    candidates(source, list(REWRITES), {}, EXERCISE.graded_name)
    assert parses == [source]


def test_no_reader_changes_the_shared_tree():
    source = load_submission(HAND_IN).source
    syntax_tree.parsed.cache_clear()
    before = ast.dump(syntax_tree.parsed(source), include_attributes=True)
    rules.violations(source, EXERCISE)
    static_pass.analyse(source)
    candidates(source, list(REWRITES), {}, EXERCISE.graded_name)
    assert ast.dump(syntax_tree.parsed(source), include_attributes=True) == before
