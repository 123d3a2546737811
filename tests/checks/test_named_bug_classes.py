"""Is every bug of a mutant that holds several, or a bug that poisons every number, named by its own id and no other?

tests/checks/test_graders.py asks each mutant for its `# expect:` id; here the mutants whose whole list of ids matters:
three bugs in one module (each named, none hidden by the no-attention gate), NaN from a mask times an infinity
(its own finding, not the mask or softmax variant the NaN places resemble), a -1e-9 fill (a typo for -1e9), two
bugs behind a one-row band-aid; and the bugs a crash hides, found behind it by a verified fix.
"""
import pytest

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

MUTANTS = SUBMISSIONS / "mutants"
EXACTLY = {
    "wrong-input__6": {"wrong-input", "mask-direction", "head-split"},
    "mask-nan": {"mask-nan"},
    "mask-nan__2": {"mask-nan"},
    "mask-missing__4": {"mask-missing"},
    "dropout-in-eval__3": {"dropout-in-eval"},
    "float-head-dim__2": {"float-head-dim"},
    "mask-diagonal__3": {"missing-scale", "mask-diagonal"},  # row 0 patched by hand: the other rows name both
}


@pytest.mark.parametrize("name", sorted(EXACTLY))
def test_each_bug_is_named_and_nothing_else(graded, name):
    report = graded(MUTANTS / f"{name}.py")
    assert set(report["mistakes"]) == EXACTLY[name], report["mistakes"]


def test_bugs_behind_a_crash_are_named_and_marked_as_found_behind_it(graded):
    """`if attn_mask:` on a tensor raises on every call; the verified fix (`is not None`) lets the regrade reach the
    module's missing wo and unused attn_dropout, reported as found behind the crash."""
    report = graded(MUTANTS / "tensor-truth-value.py")
    assert report["mistakes"][0] == "tensor-truth-value"
    behind = {entry["mistake"]: entry["behind"] for entry in report["found_behind"]}
    assert behind == {"missing-out-proj": ["tensor-truth-value"], "dropout-not-applied": ["tensor-truth-value"]}
