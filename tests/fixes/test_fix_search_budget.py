"""Does the fix search share the hand-in's one time budget instead of taking a fresh one per regrade?

A submission may take 60 s (docs/isolation.md), its grading and every regrade of an edited copy (the verified fixes,
what a crash hides) together. Red team 3's route 7 held a class run 95 s and 140 s on one hand-in: each regrade got a
clock of its own. Here the hand-in's clock is set, not waited out (`Grading.left`, as the judge-wait test sets a
submission's clock): the grading itself keeps its own time and verdicts, and the search gets what is left.
"""
import pytest

from support.paths import SUBMISSIONS
from grader import grade as grade_module
from grader.grade import grade_submission

pytestmark = pytest.mark.sandbox

TWO_FIXES = SUBMISSIONS / "fixes" / "bare-matmul-and-dropout-lowercase.py"


def _strict(report: dict) -> list:
    return [(c["id"], c["passed"], c["points"]) for c in report["checks"]]


@pytest.fixture(scope="module")
def with_time() -> dict:
    """The hand-in graded with its whole budget: both fixes found, nothing said of time."""
    return grade_submission(TWO_FIXES)


def test_with_nothing_left_after_the_grading_no_fix_is_tried_and_the_report_says_so(monkeypatch, with_time):
    monkeypatch.setattr(grade_module.Grading, "left", lambda self: 0.0)
    report = grade_submission(TWO_FIXES)
    assert sorted(f["mistake"] for f in with_time["fixes"]) == ["bare-matmul", "dropout-lowercase"]
    assert "fix_search" not in with_time
    assert report["fixes"] == [] and _strict(report) == _strict(with_time)  # the grading itself is the same
    search = report["fix_search"]
    assert search["cut_short"] == "time"  # both fixes, and what each part's crash hides
    assert sorted(search["not_tried"]) == ["bare-matmul", "behind:mha", "behind:sdpa", "dropout-lowercase"]
    assert "时间用尽" in search["message_zh"] and "60 秒" in search["message_zh"]
    assert "cut short by time" in search["message_en"] and "60 s" in search["message_en"]
    assert "not tried: bare-matmul, dropout-lowercase" in search["message_en"] and "没有尝试" in search["message_zh"]


def test_a_regrade_that_runs_out_of_the_hand_ins_time_is_dropped_and_the_rest_is_not_tried(monkeypatch, tmp_path):
    """3 s left when the first regrade starts, none once it runs: its probes get what is left, it is cut short, its
    report is neither used nor cached, and the search stops there."""
    readings = []
    monkeypatch.setattr(grade_module.Grading, "left", lambda self: readings.append(1) or (3.0 if len(readings) == 1
                                                                                          else 0.0))
    report = grade_submission(TWO_FIXES, cache=tmp_path)
    assert len(readings) > 1  # the regrade's probes read the hand-in's clock
    assert report["fixes"] == [] and sorted(report["fix_search"]["not_tried"]) == ["bare-matmul", "behind:mha",
                                                                                  "behind:sdpa", "dropout-lowercase"]
    assert len(list(tmp_path.glob("*.json"))) == 1  # the hand-in's own report only
    assert "timeout" not in report["mistakes"]
