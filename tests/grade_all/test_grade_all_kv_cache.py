"""grade-all on a folder of the second lab (`kv_cache`), from the command line as an instructor runs it, told nothing
of the exercise: does the solution get 20/20, do the stubs get 0, and does every mutant lose points on its part with
its own mistake id named, in Chinese and in English, in the JSON list and in the class summary of each language?

Each hand-in is graded once (the session's report cache); the class summary is printed again in the other language
from that cache.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader.catalog import catalog
from support.hand_ins import header
from support.paths import ROOT, SUBMISSIONS

pytestmark = pytest.mark.sandbox

MUTANTS = sorted((SUBMISSIONS / "kv_cache" / "mutants").glob("*.py"))
SOLUTION = ROOT / "solutions" / "kv_cache" / "kv_cache.py"
STUBS = {"stub-py": ROOT / "exercises" / "kv_cache" / "kv_cache.py",
         "stub-notebook": ROOT / "release" / "kv_cache" / "kv_cache.ipynb"}


@pytest.fixture(scope="module")
def class_dir(tmp_path_factory) -> Path:
    """DIR/<student>/<file>: the solution, both stubs and every mutant, under the names they have in the repo."""
    root = tmp_path_factory.mktemp("kv-cache-class")
    for student, path in {"solution": SOLUTION, **STUBS, **{f"mutant-{p.stem}": p for p in MUTANTS}}.items():
        (root / student).mkdir()
        (root / student / path.name).write_bytes(path.read_bytes())
    return root


def grade_all(class_dir: Path, out: Path, lang: str) -> tuple[dict[str, dict], str]:
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(class_dir), "--json", str(out),
                           "--lang", lang], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr
    return {r["student"]: r for r in json.loads(out.read_text(encoding="utf-8"))}, done.stdout


@pytest.fixture(scope="module")
def graded(class_dir, tmp_path_factory) -> dict[str, tuple[dict[str, dict], str]]:
    out = tmp_path_factory.mktemp("kv-cache-reports")
    return {lang: grade_all(class_dir, out / f"{lang}.json", lang) for lang in ("zh", "en")}


def test_the_solution_scores_20_of_20(graded):
    reports, _ = graded["en"]
    solution = reports["solution"]
    assert (solution["score"], solution["max_score"]) == (20.0, 20.0), solution.get("error")
    assert solution["mistakes"] == []
    # the lab told by the hand-in alone: its three parts, and the integrity check every grading has (0 points)
    assert {c["part"] for c in solution["checks"]} == {"repeat", "cache", "gqa", "integrity"}


@pytest.mark.parametrize("stub", sorted(STUBS))
def test_a_stub_scores_0_and_says_it_is_not_implemented(graded, stub):
    reports, _ = graded["en"]
    report = reports[stub]
    assert (report["score"], report["max_score"]) == (0.0, 20.0), report.get("error")
    assert "not-implemented" in report["mistakes"]


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda p: p.stem)
def test_a_mutant_loses_points_on_its_part_with_its_id_named_in_both_languages(graded, mutant):
    expected, part = header(mutant, "expect"), header(mutant, "part")
    reports, _ = graded["en"]
    report = reports[f"mutant-{mutant.stem}"]
    assert report["max_score"] == 20.0 and report["score"] < 20.0, report.get("error")
    on_part = [c for c in report["checks"] if c["part"] == part]
    assert sum(c["points"] for c in on_part) < sum(c["max_points"] for c in on_part), part
    assert expected in report["mistakes"]
    naming = [c for c in report["checks"] if expected in c["mistakes"] and not c["passed"]]
    assert naming, f"no failed check names {expected}"
    entry = catalog()[expected]
    assert any(entry["title_zh"] in c["message_zh"] and entry["title_en"] in c["message_en"] for c in naming)


def test_the_class_summary_counts_the_class_and_names_its_mistakes_in_each_language(graded):
    """The summary grade-all prints in each language: every hand-in counted, and the lab's most frequent mistake
    (the stubs and the unfilled mutants: not-implemented) under its title in that language."""
    reports, _ = graded["en"]
    for lang, counted in (("zh", "提交数"), ("en", "Submissions")):
        _, summary = graded[lang]
        assert f"{counted}: {len(reports)}" in summary
        assert f"{'not-implemented':<20} {catalog()['not-implemented'][f'title_{lang}']}" in summary, summary
