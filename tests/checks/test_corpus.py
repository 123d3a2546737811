"""Does the grader get real code right? A corpus of attention implementations in the idioms of public projects
(tests/corpus/), each a reconstruction written here from scratch: its first line names the project where the
pattern was seen (`# seen in: <project>: <pattern>`), and the file reproduces that code's behaviour (the same bug,
idiom, shapes and dtypes) without its text. Whether it is correct is decided by tests/corpus/truth.py (float64
references written for this test), not by the grader; tests/corpus/expected.py records the verdicts and the
mistake ids the grader must name.
"""
import json
import sys
from pathlib import Path

import pytest

from grader.exercises.attention import MAX_SCORE

from support.paths import CORPUS

pytestmark = pytest.mark.sandbox

sys.path.insert(0, str(CORPUS))

from expected import ALL, EXPECTED  # noqa: E402
import truth  # noqa: E402

ON_DISK = sorted(p for p in CORPUS.glob("*.py") if p.stem not in ("truth", "expected"))
FILES = [p for p in ON_DISK if p.stem in EXPECTED]


def failures(report: dict) -> str:
    return json.dumps([c for c in report["checks"] if not c["passed"]], ensure_ascii=False, indent=1)[:4000]


def header(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[:16]


SEEN_IN = "# seen in:"


def test_every_corpus_file_has_a_verdict_and_names_where_its_pattern_was_seen():
    assert {p.stem for p in ON_DISK} <= set(ALL), "a corpus file without a row in expected.py"
    assert set(EXPECTED) <= {p.stem for p in FILES}, "a row in expected.py without its file"
    for path in FILES:
        first, *rest = header(path)
        assert first.startswith(SEEN_IN) and len(first) > len(SEEN_IN) + 10, path.name
        # a reconstruction cites no source text: no licence, url or adaptation notes of an excerpt
        assert not any(line.startswith(("# source:", "# licence:", "# url:", "# adapted:")) for line in rest), path.name


def test_the_corpus_holds_both_correct_and_buggy_code():
    correct = [name for name, entry in EXPECTED.items() if not entry["fails"]]
    buggy = [entry for entry in EXPECTED.values() if entry["fails"]]
    kinds = {mistake for entry in buggy for mistake in entry["mistakes"]}
    assert len(EXPECTED) >= 15 and len(correct) >= 5 and len(buggy) >= 10 and len(kinds) >= 6, (len(correct), kinds)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_truth_agrees_with_the_table(path):
    assert truth.failures(path) == EXPECTED[path.stem]["fails"]


def misgraded(entry: dict, report: dict) -> list[str]:
    """How a report departs from the file's row in expected.py (empty: graded right)."""
    if not entry["fails"]:
        problems = [] if report["score"] == MAX_SCORE else [f"correct code scored {report['score']}"]
        problems += [f"correct code blamed for {report['mistakes']}"] if report["mistakes"] else []
    else:
        problems = [] if report["score"] < MAX_SCORE else ["buggy code got full marks"]
        missing = [m for m in entry["mistakes"] if m not in report["mistakes"]]
        problems += [f"expected {entry['mistakes']}, got {report['mistakes']}"] if missing else []
        # the first mistake is the one to fix first: it must be a real bug of this file, not a side effect
        if entry["mistakes"] and report["mistakes"] and report["mistakes"][0] not in entry["mistakes"]:
            problems.append(f"first mistake {report['mistakes'][0]!r} is none of {entry['mistakes']}")
        # an id the file does not deserve sends the student after a bug they do not have
        wrong = [m for m in report["mistakes"] if m not in entry["mistakes"] + entry.get("also", [])]
        problems += [f"blamed for {wrong}, which it does not have"] if wrong else []
    missing_advice = [a for a in entry.get("advice", []) if a not in (report.get("advice") or [])]
    return problems + ([f"expected advice {missing_advice}, got {report.get('advice')}"] if missing_advice else [])


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_grader_scores_and_names_what_the_truth_says(graded, path):
    report = graded(path)
    assert not misgraded(EXPECTED[path.stem], report), f"{path.name}: {misgraded(EXPECTED[path.stem], report)}\n" \
                                                       f"{failures(report)}"


def test_a_side_effect_named_first_is_misgrading():
    """All the right ids, but led by one the file does not have: the student would fix the wrong thing first."""
    entry = {"fails": ["sdpa.lead0"], "mistakes": ["hardcoded-dims"]}
    led_by_side_effect = {"score": MAX_SCORE / 2, "mistakes": ["mask-device", "hardcoded-dims"], "advice": []}
    assert misgraded(entry, led_by_side_effect)
    assert misgraded(entry, {**led_by_side_effect, "mistakes": ["hardcoded-dims", "mask-device"]}), "not its bug"
    side_effect_recorded = {**entry, "also": ["mask-device"]}
    assert not misgraded(side_effect_recorded, {**led_by_side_effect, "mistakes": ["hardcoded-dims", "mask-device"]})


def test_an_id_the_file_does_not_have_is_misgrading():
    entry = {"fails": ["sdpa.values", "sdpa.no_future_leak"], "mistakes": ["hardcoded-dims"]}
    assert misgraded(entry, {"score": 13, "mistakes": ["hardcoded-dims", "mask-missing"], "advice": []})
    assert not misgraded(entry, {"score": 13, "mistakes": ["hardcoded-dims"], "advice": []})


def test_correct_code_with_any_mistake_is_misgraded():
    assert misgraded({"fails": [], "mistakes": []}, {"score": MAX_SCORE, "mistakes": ["python-loop"]})
