"""Does every check of every mutant's and hostile file's report pass exactly when it earns its points?

A check that scores less than its points never says `passed` nor opens with a passing message (one that held under a
failed gate opens with "Not counted"), and a check that earns its points is never `passed: false` nor says it failed.
"""
import pytest

from support.hand_ins import own_order
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

FILES = own_order([*(SUBMISSIONS / "mutants").glob("*.py"), *(SUBMISSIONS / "hostile").glob("*.py"),
                   *(SUBMISSIONS / "behind_crash").glob("*.py")], __name__)
FAILING_OPENINGS = ("Not counted:", "Not checked:", "Not graded", "Error while")


def disagreements(report: dict) -> list[str]:
    """The checks whose `passed` or message disagrees with their points."""
    wrong = []
    for c in report["checks"]:
        if not c["max_points"]:
            continue
        earned = c["points"] == c["max_points"]
        if c["passed"] != earned:
            wrong.append(f"{c['id']}: passed={c['passed']} with {c['points']:g} of {c['max_points']:g}")
        if earned and c["message"].startswith(FAILING_OPENINGS):
            wrong.append(f"{c['id']}: full points under {c['message'][:60]!r}")
        if c.get("not_counted") and not c["message"].startswith("Not counted:"):
            wrong.append(f"{c['id']}: zeroed by a gate but says {c['message'][:60]!r}")
    return wrong


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_a_check_passes_exactly_when_it_earns_its_points(graded, path):
    assert disagreements(graded(path)) == []


@pytest.mark.unit
def test_a_check_held_under_a_failed_gate_is_neither_passed_nor_worth_anything():
    from grader.checks import Check, Outcome
    from grader.report.json_report import build_report

    def spec(id, points, gate=False):
        return Check(id, "mha", points, "hidden", "标题", "title", lambda ctx: None, gate)

    report = build_report([(spec("mha.computes_attention", 0.0, gate=True), Outcome(False, "出错。", "Error.")),
                           (spec("mha.interface", 1.0), Outcome(True, "符合接口。", "Matches the interface."))])
    report["checks"] = [{**c, "message": c["message_en"]} for c in report["checks"]]
    interface = report["checks"][1]
    assert (interface["passed"], interface["points"], interface.get("not_counted")) == (False, 0.0, True)
    assert disagreements(report) == []
