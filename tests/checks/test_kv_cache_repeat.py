"""Do the kv_cache lab's Part 1 graders (grader/checks/repeat/) give every honest `repeat_kv` its 4 points and name
each mistake of the Part 1 mutants, in Chinese and in English?

Graded through the real pipeline (`grade_submission`: the exercise read from the hand-in's code, the worker tracing
on decoys, the judge re-running each graph on the parent's own inputs), with Part 1's checks only: Parts 2 and 3
(`cache`, `gqa`) have no graders yet, so the whole exercise's list fails on their missing packages.
"""
import functools
from pathlib import Path

import pytest

from grader.catalog import catalog, explain
from grader.checks import checks_for
from grader.exercises import Exercise, Part, exercise
from grader.grade import grade_submission
from support.hand_ins import header
from support.paths import SUBMISSIONS
from support.session import SESSION_REPORTS

pytestmark = pytest.mark.sandbox

KV_CACHE = SUBMISSIONS / "kv_cache"
CORRECT = sorted((KV_CACHE / "correct").glob("*.py"))
MUTANTS = [path for path in sorted((KV_CACHE / "mutants").glob("*.py")) if header(path, "part") == "repeat"]
STUBS = KV_CACHE / "mutants" / "not-implemented.py"  # the notebook's three stubs, untouched


@functools.cache
def graded(path: Path) -> dict:
    return grade_submission(path, checks=checks_for("repeat"), cache=SESSION_REPORTS)


def failures(report: dict) -> str:
    return "\n".join(f"{c['id']} {c['mistakes']}: {c['message_en'][:600]}" for c in report["checks"] if not c["passed"])


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_every_honest_repeat_kv_scores_the_full_four_points(path):
    report = graded(path)
    assert report["score"] == report["max_score"] == 4.0, failures(report)
    assert report["mistakes"] == []
    assert {c["part"] for c in report["checks"]} == {"repeat", "integrity"}  # the sandbox's own, graded everywhere


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages(path):
    expected = header(path, "expect")
    report = graded(path)
    assert report["score"] < 4.0, f"{path.name} got full marks"
    assert expected in report["mistakes"], f"{path.name}: expected {expected}\n{failures(report)}"
    naming = [c for c in report["checks"] if expected in c["mistakes"]]
    assert naming and all(not c["passed"] for c in naming)
    for check in naming:
        zh, en = check["message_zh"].splitlines(), check["message_en"].splitlines()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh[0]) and en[0] != zh[0], check["id"]
        assert explain(expected, "zh") in zh and explain(expected, "en") in en, check["id"]


def test_the_tiled_order_says_which_heads_went_where():
    report = graded(KV_CACHE / "mutants" / "repeat-kv-order.py")
    values = next(c for c in report["checks"] if c["id"] == "repeat.values")
    assert "hold input heads [0, 1, 0, 1], expected [0, 0, 1, 1]" in values["message_en"]
    assert "依次是输入的第 [0, 1, 0, 1] 个头，应为 [0, 0, 1, 1]" in values["message_zh"]


def test_the_untouched_stubs_score_zero_with_not_implemented():
    report = graded(STUBS)
    assert report["score"] == 0.0
    assert "not-implemented" in report["mistakes"]
    assert all(not c["passed"] for c in report["checks"] if c["max_points"] > 0)


@pytest.mark.unit
def test_part_one_is_declared_with_four_points_in_public_and_hidden_checks():
    checks = checks_for("repeat")
    assert sum(c.points for c in checks) == exercise("kv_cache").part["repeat"].points == 4.0
    assert {c.visibility for c in checks} == {"public", "hidden"}
    assert {c.id for c in checks if c.gate} == {"repeat.own_implementation", "repeat.rules"}  # as every part has
    assert len({c.id for c in checks}) == len(checks)


@pytest.mark.unit
def test_an_exercise_with_a_part_without_graders_fails_loudly_and_a_part_alone_grades():
    """A part's own checks import its package alone; the exercise's whole list names the missing one."""
    repeat = exercise("kv_cache").part["repeat"]
    unfinished = Exercise("unfinished", (repeat, Part("no_graders_yet", 2, "Nothing", "", "", "", 1.0, "part2")), (), "",
                          (), ())
    with pytest.raises(ModuleNotFoundError, match="grader.checks.no_graders_yet"):
        checks_for(exercise=unfinished)
    assert [c.part for c in checks_for("repeat")] == ["repeat"] * 7


@pytest.mark.unit
def test_the_ids_part_one_names_are_in_the_catalog():
    assert {header(path, "expect") for path in MUTANTS} <= set(catalog())
