"""Do the hidden graders give full marks to every correct style and catch every catalogued mistake?

Correct submissions live in tests/submissions/correct/ (one style each); mutants in
tests/submissions/mutants/ are the reference with one mistake written the way students write
it, headed `# expect: <mistake id>` and `# part: sdpa|mha|both`.
"""
import importlib.util
import json

import pytest

from support.hand_ins import header

from support.paths import REFERENCE, STUBS, SUBMISSIONS
from grader.exercises.attention import MAX_SCORE, PARTS
from grader.catalog import catalog, explain
from grader.checks import checks_for
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.sandbox

CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))
MUTANTS = sorted((SUBMISSIONS / "mutants").glob("*.py"))
# the second lab's mutants of the parts that have graders (grader/checks/<part>/), graded by its own test files
# (tests/checks/test_kv_cache_*.py), count as the graded mutant of their catalog ids
KV_CACHE_GRADED_MUTANTS = [path for path in sorted((SUBMISSIONS / "kv_cache" / "mutants").glob("*.py"))
                           if importlib.util.find_spec(f"grader.checks.{header(path, 'part')}") is not None]
ADVISORY = {"mask-value-overflow"}


def failures(report: dict) -> str:
    return json.dumps([c for c in report["checks"] if not c["passed"]], ensure_ascii=False, indent=1)[:4000]


def test_reference_solution_gets_full_marks(graded):
    report = graded(REFERENCE)
    assert report["score"] == report["max_score"] == MAX_SCORE, failures(report)
    assert report["mistakes"] == []


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_style_gets_full_marks(graded, path):
    report = graded(path)
    assert report["score"] == report["max_score"], failures(report)


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_mutant_loses_points_and_is_diagnosed(graded, path):
    expected = header(path, "expect")
    report = graded(path)
    if expected in ADVISORY:  # explained in the report without costing points (the exercise is float32)
        assert any(expected in c.get("advice", []) for c in report["checks"]), failures(report)
        return
    if expected != "tampering":  # tampering earns nothing, but right answers it did compute keep their points
        assert report["score"] < report["max_score"], f"{path.name} got full marks"
    assert expected in report["mistakes"], f"{path.name}: expected {expected}, got {report['mistakes']}\n{failures(report)}"
    part = header(path, "part")
    if part in ("sdpa", "mha"):  # a mistake in one part must not cost points in the other
        other = "mha" if part == "sdpa" else "sdpa"
        lost = [c["id"] for c in report["checks"] if c["part"] == other and not c["passed"]]
        assert not lost, f"{path.name}: a {part} mistake failed {other} checks {lost}"


def test_untouched_stubs_score_zero_with_not_implemented(graded):
    report = graded(STUBS)
    assert report["score"] == 0.0
    assert "not-implemented" in report["mistakes"]
    assert all(c["passed"] is False for c in report["checks"] if c["max_points"] > 0)


@pytest.mark.unit
def test_there_are_enough_correct_styles_and_a_mutant_for_every_code_mistake():
    assert len(CORRECT) >= 8
    covered = {header(p, "expect") for p in MUTANTS + KV_CACHE_GRADED_MUTANTS}
    not_code = {"syntax-error", "timeout", "memory-limit", "tampering",  # covered by the hostile suite too
                "submission-too-large", "submission-link", "not-a-notebook",  # tests/handin/test_untrusted_input.py
                "submission-too-costly"}  # tests/handin/test_parent_bounded.py
    assert set(catalog()) - covered - not_code == set(), "mistake ids without a mutant"


def test_every_failure_says_what_failed_in_chinese_then_english_and_explains_its_mistakes(graded):
    """A failed check opens with its own sentence in each language (what property failed), and each mistake it
    names is a catalog id whose explanation follows in that language."""
    for path in MUTANTS:
        for check in graded(path)["checks"]:
            if check["passed"]:
                continue
            where = f"{path.name}: {check['id']}"
            assert set(check["mistakes"]) <= set(catalog()), where
            for lang in ("zh", "en"):
                lines = check[f"message_{lang}"].splitlines()
                explanations = [explain(m, lang) for m in check["mistakes"]]
                assert lines and lines[0].strip() and lines[0] not in explanations, f"{where} failed silently ({lang})"
                assert all(e in lines for e in explanations), f"{where}: a mistake left unexplained ({lang})"
            assert any("\u4e00" <= ch <= "\u9fff" for ch in check["message_zh"].splitlines()[0]), where
            assert check["message_en"].splitlines()[0] != check["message_zh"].splitlines()[0], where


@pytest.mark.unit
def test_every_mistake_has_zh_and_en_explanation_and_fix():
    for mistake, entry in catalog().items():
        for key in ("title", "explain", "fix"):
            assert entry[f"{key}_zh"].strip() and entry[f"{key}_en"].strip(), (mistake, key)


@pytest.mark.unit
def test_points_per_part_are_as_declared_and_ids_are_unique():
    checks = checks_for(exercise=EXERCISE)
    assert len({c.id for c in checks}) == len(checks)
    for part in PARTS:
        assert sum(c.points for c in checks if c.part == part.id) == part.points
    assert {c.id for c in checks if c.visibility == "public"} >= {"sdpa.shapes", "sdpa.causal_zeros", "mha.shapes"}
