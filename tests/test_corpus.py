"""Does the grader get real code right? A corpus of public attention implementations (tests/corpus/).

Each file cites its source and its minimal adaptation. Whether it is correct is decided by tests/corpus/truth.py
(float64 references written for this test), not by the grader; tests/corpus/expected.py records the verdicts and
the mistake ids the grader must name.
"""
import json
import sys
from pathlib import Path

import pytest

from grader.assignment import MAX_SCORE

CORPUS = Path(__file__).resolve().parent / "corpus"
sys.path.insert(0, str(CORPUS))

from expected import EXPECTED  # noqa: E402
import truth  # noqa: E402

FILES = sorted(p for p in CORPUS.glob("*.py") if p.stem not in ("truth", "expected"))


def failures(report: dict) -> str:
    return json.dumps([c for c in report["checks"] if not c["passed"]], ensure_ascii=False, indent=1)[:4000]


def test_every_corpus_file_has_a_verdict_and_a_cited_source():
    assert {p.stem for p in FILES} == set(EXPECTED)
    assert len(FILES) >= 15
    for path in FILES:
        head = path.read_text(encoding="utf-8").splitlines()[:12]
        assert head[0].startswith("# source:") and any(line.startswith("# licence:") for line in head), path.name
        assert any(line.startswith("# adapted:") for line in head), path.name


def test_the_corpus_holds_both_correct_and_buggy_code():
    correct = [name for name, entry in EXPECTED.items() if not entry["fails"]]
    assert len(correct) >= 5 and len(EXPECTED) - len(correct) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_truth_agrees_with_the_table(path):
    assert truth.failures(path) == EXPECTED[path.stem]["fails"]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_grader_scores_and_names_what_the_truth_says(graded, path):
    entry = EXPECTED[path.stem]
    report = graded(path)
    if not entry["fails"]:
        assert report["score"] == MAX_SCORE, failures(report)
        assert report["mistakes"] == [], failures(report)
        return
    assert report["score"] < MAX_SCORE, f"{path.name} got full marks"
    missing = [m for m in entry["mistakes"] if m not in report["mistakes"]]
    assert not missing, f"{path.name}: expected {entry['mistakes']}, got {report['mistakes']}\n{failures(report)}"
    missing_advice = [a for a in entry.get("advice", []) if a not in report.get("advice", [])]
    assert not missing_advice, f"{path.name}: expected advice {missing_advice}, got {report.get('advice')}"
