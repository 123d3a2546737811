"""Is a forward that is wrong only where gradients are taken named for what it computes, never as a wrong backward?

The gradient probes run in training, in float64; code may compute otherwise there than in every value probe. The
gradient check holds the probe's own forward to the reference (grader/checks/common.wrong_forward): the numbers name
the mistake, and `wrong-backward` stays for a backward that does not match a right forward.
"""
import pytest

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox


def test_a_forward_wrong_only_in_the_gradient_probes_is_named_by_its_numbers(graded):
    report = graded(SUBMISSIONS / "mutants" / "missing-scale__3.py")
    gradients = next(check for check in report["checks"] if check["id"] == "sdpa.gradients")
    assert not gradients["passed"] and gradients["mistakes"] == ["missing-scale"], gradients
