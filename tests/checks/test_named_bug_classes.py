"""Is every bug of a mutant that holds several, or a bug that poisons every number, named by its own id and no other?

tests/checks/test_graders.py asks each mutant for its `# expect:` id; here the mutants whose whole list of ids matters:
three bugs in one module (each named, none hidden by the no-attention gate), NaN from a mask times an infinity
(its own finding, not the mask or softmax variant the NaN places resemble), a -1e-9 fill (a typo for -1e9), two
bugs behind a one-row band-aid; and the bugs a crash hides, found behind it by a verified fix.
"""
import pytest

from support.paths import SUBMISSIONS, TESTS

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
    # nn.Softmax() without dim: every causal row NaN but the last; neither dropout called is a fact of the code all the same
    "dropout-not-applied__3": {"softmax-dim", "dropout-not-applied"},
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


def test_a_crash_no_id_names_zeroes_the_part_and_the_check_that_held_says_it_is_not_counted(graded):
    """A NameError on every forward call fails the module's gate; its layout check held (wq..wo and both dropouts
    are right) and scores 0, so it is not `passed` and its message opens with "not counted" and the gate, never with
    the pass alone (the report in English; tests/report/test_core_report.py holds both languages). Behind the crash,
    `n_head` mended as `self.n_head`, resid_dropout is never called."""
    report = graded(TESTS / "corpus" / "undefined_name_in_forward.py")
    mha = [c for c in report["checks"] if c["part"] == "mha"]
    assert sum(c["points"] for c in mha) == 0.0
    interface = next(c for c in mha if c["id"] == "mha.interface")
    assert not interface["passed"] and interface["not_counted"]
    assert interface["points"] == 0.0 and interface["max_points"] == 1.0
    assert interface["message"].startswith("Not counted: mha.computes_attention failed")
    held_for_nothing = [c["id"] for c in report["checks"] if c["passed"] and c["max_points"] and not c["points"]]
    assert held_for_nothing == []
    assert report["found_behind"] == [{"mistake": "dropout-not-applied", "behind": ["NameError"]}]
