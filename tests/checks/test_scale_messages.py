"""Does a wrongly scaled submission hear which factor it used, in both languages?

Mutants headed `# says: <text>` must show that text in a failed check's English message, with
the factor's Chinese counterpart beside it.
"""
import pytest

from support.hand_ins import header

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

SAYS = [p for p in sorted((SUBMISSIONS / "mutants").glob("*.py")) if header(p, "says")]


def test_scale_fixtures_are_there():
    assert {header(p, "expect") for p in SAYS} == {"wrong-scale", "missing-scale"}
    assert {header(p, "part") for p in SAYS} == {"sdpa", "mha"}


@pytest.mark.parametrize("path", SAYS, ids=[p.stem for p in SAYS])
def test_scale_mistake_names_the_factor(graded, path):
    report = graded(path)
    said, expect = header(path, "says"), header(path, "expect")
    named = [c for c in report["checks"] if not c["passed"] and said in c["message_en"]]
    assert named, [c["message_en"] for c in report["checks"] if not c["passed"]]
    right = "√head_dim" if header(path, "part") == "mha" else "√d_k"
    assert all(f"divide by {right}" in c["message_en"] and f"应除以 {right}" in c["message_zh"] for c in named)
    assert all(c["mistakes"] == [expect] for c in named)
