"""Does every check that compares several calls meet each regime and layout, in an order nobody knows ahead?

Code keyed on `requires_grad`, `is_leaf`, grad mode or contiguity behaves well only where a check looks; a check whose
calls meet both values of each (grader/checks/regimes.py) sees the other path too.
"""
import pytest

from grader.checks import Context
from grader.checks.regimes import combinations, regimes

pytestmark = pytest.mark.unit


def _context(secret: int) -> Context:
    return Context(student=None, static={}, cuda=False, secret=secret)


def test_two_calls_of_a_kind_meet_both_regimes():
    chosen = regimes(_context(1), "a check", ["heads", "heads", "contiguous", "single", "contiguous"])
    assert {chosen[0], chosen[1]} == {"training", "inference"}
    assert {chosen[2], chosen[4]} == {"training", "inference"}


def test_four_calls_meet_every_layout_in_every_regime():
    for secret in range(20):
        assert set(combinations(_context(secret), "a check", 4)) == {
            ("heads", "training"), ("heads", "inference"), ("contiguous", "training"), ("contiguous", "inference")}


def test_the_order_is_drawn_per_grading_and_the_same_within_one():
    orders = {tuple(combinations(_context(secret), "a check", 4)) for secret in range(20)}
    starts = {regimes(_context(secret), "a check", [None])[0] for secret in range(20)}
    assert len(orders) > 1 and starts == {"training", "inference"}
    assert combinations(_context(5), "a check", 4) == combinations(_context(5), "a check", 4)
