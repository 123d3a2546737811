"""Does the public self-check's reading of the grading rules leave every correct style alone, as the grader does?

A student whose code the grader gives full marks must not be told by the notebook that it breaks a rule (an assert
message naming Meta's LLaMA once read there as looking for the `meta` stand-in).
"""
from __future__ import annotations

import pytest

from support.paths import SUBMISSIONS
from support.public_selfcheck import load_public

pytestmark = pytest.mark.unit

CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))
PROBING = '''import torch
def scaled_dot_product_attention(Q, K, V, is_causal=True):
    if str(Q.device).startswith("me" + "ta"):
        return Q, Q
    return Q, Q
'''


@pytest.fixture(scope="module")
def selfcheck():
    return load_public()[0]


def breach(selfcheck, source: str, part: str) -> str | None:
    try:
        selfcheck.check_rules(part, {"__selfcheck_sources__": [source]})
    except selfcheck.SelfCheckFailure as failure:
        return str(failure)
    return None


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_no_rule_is_said_broken_in_correct_code(selfcheck, path):
    source = path.read_text(encoding="utf-8")
    assert [breach(selfcheck, source, part) for part in selfcheck.SELFCHECK_GRADED] == [None, None]


def test_the_stand_ins_name_still_breaks_a_rule_where_it_meets_the_devices_text(selfcheck):
    assert "device-probing" in breach(selfcheck, PROBING, "part1")
