"""Do the public self-check and the grader name a mistake the same way, on every mutant?

One catalog for both: a student who reads `[hardcoded-dims]` in the notebook reads `hardcoded-dims`
in the graded report. Over whatever mutants tests/submissions/mutants holds, per part:
- every id the self-check names (not its own SELFCHECK_OWN_MISTAKES: a wrong result or an error it cannot name) is one
  the grader names for that part;
- where the self-check fails a part, every id of its catalog (`SELFCHECK_MISTAKES`) that the grader
  names for that part is named by the self-check too: what it can observe, it names as the grader does (not what
  the grader read from the code's graph alone, which the self-check never sees).
The self-check runs here from release/attention/ (as built) as `python -m pytest` runs it (its conftest's loader).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.hand_ins import header, own_order
from support.public_selfcheck import load_public
from grader.catalog import catalog
from support.paths import ROOT

pytestmark = pytest.mark.sandbox

MUTANTS = own_order(list((ROOT / "tests" / "submissions" / "mutants").glob("*.py")), __name__)
# Mutants that attack the process running them: the self-check runs student code unconfined, on the
# student's machine, so it is no place for them (tests/student/test_public_selfcheck.py).
PROCESS_ATTACKS = ("memory-limit", "timeout", "tampering")
RESOURCE_LIMITS = {"timeout", "memory-limit"}
READ_FROM_THE_GRAPH = "where the code's graph differs from the reference's names them"


@pytest.fixture(scope="module")
def public():
    """release/attention's selfcheck.py and its pytest loader (conftest.py, which imports `selfcheck`)."""
    return load_public()


def selfcheck_ids(public, path: Path) -> dict[str, set[str]]:
    """part marker -> the ids the self-check names for it, as `python -m pytest` would on this file."""
    selfcheck, loader = public
    namespace, syntax_errors = loader.load_namespace(path)
    if syntax_errors:
        return {part: {"syntax-error"} for part in selfcheck.SELFCHECK_CHECKS}
    return {part: {m for f in selfcheck.run_part(part, namespace).values() if f for m in f.mistakes}
            for part in selfcheck.SELFCHECK_CHECKS}


def test_the_selfcheck_catalog_is_the_graders(public):
    """Every id the self-check can name, but its own, is a catalog id (titles: test_public_selfcheck.py)."""
    selfcheck, _ = public
    assert set(selfcheck.SELFCHECK_MISTAKES) - set(selfcheck.SELFCHECK_OWN_MISTAKES) <= set(catalog())
    assert not set(selfcheck.SELFCHECK_OWN_MISTAKES) & set(catalog())
    assert {"hardcoded-dims", "mask-diagonal"} <= set(selfcheck.SELFCHECK_MISTAKES)


@pytest.mark.parametrize("path", [p for p in MUTANTS if not p.stem.startswith(PROCESS_ATTACKS)], ids=lambda p: p.stem)
def test_selfcheck_and_grader_name_the_same_ids(public, graded, path):
    selfcheck, _ = public
    report = graded(path)
    for part, (marker, _) in zip(("sdpa", "mha"), selfcheck.SELFCHECK_CHECKS.items()):
        seen = selfcheck_ids(public, path)[marker]
        by_grader = {m for check in report["checks"] if check["part"] == part for m in check["mistakes"]}
        # ids the grader read from the code's graph where no numbers reproduce the output: the self-check, which
        # runs the code and sees only numbers, cannot observe them (grader/graph/structure.py)
        from_the_graph = {m for check in report["checks"] if check["part"] == part
                          and READ_FROM_THE_GRAPH in check["message_en"] for m in check["mistakes"]}
        if by_grader & RESOURCE_LIMITS:  # the grader's run was cut short (a busy machine): nothing to compare
            continue
        assert seen - set(selfcheck.SELFCHECK_OWN_MISTAKES) <= by_grader, f"{part}: the self-check names {seen}, the grader {by_grader}"
        if seen:
            observable = (by_grader - from_the_graph) & set(selfcheck.SELFCHECK_MISTAKES)
            assert observable <= seen, f"{part}: the grader names {observable - seen}, the self-check only {seen}"


@pytest.mark.parametrize("path", [p for p in MUTANTS if header(p, "expect") == "mask-diagonal"], ids=lambda p: p.stem)
def test_no_message_claims_a_leak_where_the_output_is_nan(public, graded, path):
    """The diagonal masked too: row 0 is NaN and nothing leaks; neither the grader nor the self-check says it does."""
    selfcheck, loader = public
    report = graded(path)
    assert "mask-diagonal" in report["mistakes"]
    for check in report["checks"]:
        assert "leak" not in check["message_en"] and "泄露" not in check["message_zh"], check["id"]
    namespace, _ = loader.load_namespace(path)
    for part in selfcheck.SELFCHECK_CHECKS:
        for failure in filter(None, selfcheck.run_part(part, namespace).values()):
            assert "leak" not in failure.seen_en and "泄漏" not in failure.seen_zh, failure.seen_en
