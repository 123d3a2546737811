"""The per-call time limit an instructor may set ($ATTENTION_KIT_PROBE_SECONDS): read into every entry point's
limits, keyed into the report cache, and refused loudly when it is not a number of seconds."""
from __future__ import annotations

import pytest

from support.paths import REFERENCE

from support.session import SESSION_PROBE_SECONDS
from grader.report import cache as report_cache
from grader.errors import UsageError
from grader.grade import default_limits
from grader.process import PROBE_SECONDS_ENV
from grader.sandbox.confinement import Limits
from grader.handin.source import load_submission

pytestmark = pytest.mark.unit


def test_the_default_is_ten_seconds_and_the_variable_replaces_it(monkeypatch):
    monkeypatch.delenv(PROBE_SECONDS_ENV)
    assert default_limits().probe_seconds == Limits.probe_seconds == 10.0
    monkeypatch.setenv(PROBE_SECONDS_ENV, " 2.5 ")
    assert default_limits().probe_seconds == 2.5
    assert default_limits().submission_seconds == Limits.submission_seconds  # only the per-call limit moves


def test_this_session_grades_with_its_short_limit():
    """The suite's timeout fixtures wait out SESSION_PROBE_SECONDS, not the product's 10 s (tests/conftest.py)."""
    assert default_limits().probe_seconds == float(SESSION_PROBE_SECONDS) < Limits.probe_seconds


def test_another_limit_is_another_cache_key(monkeypatch):
    """A report graded under one limit is never served under another: a timeout may hang on it."""
    submission = load_submission(REFERENCE)
    keys = []
    for seconds in ("10", "3"):
        monkeypatch.setenv(PROBE_SECONDS_ENV, seconds)
        keys.append(report_cache.key(submission, ["sdpa.values"], default_limits(), False, "2.13.0"))
    assert keys[0] != keys[1]


@pytest.mark.parametrize("value", ["0", "-1", "abc", "nan", "inf", "1e9", "10s"])
def test_a_value_that_is_not_seconds_is_a_usage_error_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv(PROBE_SECONDS_ENV, value)
    with pytest.raises(UsageError, match=PROBE_SECONDS_ENV):
        default_limits()
