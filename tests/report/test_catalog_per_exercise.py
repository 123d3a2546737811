"""Does a report of one lab tell its student only about that lab: no catalog text a lab can diagnose names the other
lab's graded names, layers or part numbers?

The ids each lab can diagnose are read from its mutants (`# expect:`) and the catalog groups every hand-in can meet
(refused, rules, does-not-run); the names are written out, as the labs' notebooks state them.
"""
from __future__ import annotations

import re

import pytest

from grader.catalog import catalog, explain
from grader.checks import Check, Outcome
from grader.report.json_report import build_report
from grader.report.text import render_text
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.unit

ANY_HAND_IN = ("refused", "rules", "does-not-run")
"""Catalog groups a hand-in of either lab can meet: its file, the grading rules, code that does not run."""
LAB_ONE_NAMES = ("scaled_dot_product_attention", "MultiHeadAttention", "attn_dropout", "resid_dropout")
LAB_TWO_NAMES = ("repeat_kv", "KVCache", "GroupedQueryAttention", "cache_k", "cache_v", "start_pos", "n_kv_heads")
PART_NUMBER = re.compile(r"Part \d|第 ?\d ?部分|第[一二三四]部分")
"""A part's number: Part 1 is `scaled_dot_product_attention` in one lab and `repeat_kv` in the other."""


def named(name: str, text: str) -> bool:
    """`name` as the student writes it (`self.resid_dropout` too): torch's own `F.scaled_dot_product_attention` is not
    the lab's function."""
    return re.search(rf"(?<!\w)(?<!F\.)(?<!functional\.){re.escape(name)}\b", text) is not None


def diagnosed(mutants: str) -> set[str]:
    expected = {m.strip() for path in (SUBMISSIONS / mutants).glob("*.py")
                for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# expect:")
                for m in line.removeprefix("# expect:").split(",")}
    return {m for m in expected if m in catalog()} | {m for m, e in catalog().items() if e["fix_first"] in ANY_HAND_IN}


LABS = {  # lab -> (its mutants, a part of it, the other lab's names)
    "attention": ("mutants", "sdpa", LAB_TWO_NAMES),
    "kv_cache": ("kv_cache/mutants", "repeat", LAB_ONE_NAMES),
}


def cases() -> list[tuple[str, str]]:
    return [(lab, mistake) for lab, (mutants, _, _) in LABS.items() for mistake in sorted(diagnosed(mutants))]


def test_each_lab_diagnoses_ids_of_its_own_and_ids_both_share():
    """The cases below are about something: lab 2's reused ids are among them, and so are its own."""
    lab_two, lab_one = diagnosed("kv_cache/mutants"), diagnosed("mutants")
    assert {"not-implemented", "wrong-scale", "wrong-return", "missing-out-proj", "repeat-kv-order"} <= lab_two
    assert "repeat-kv-order" not in lab_one and "dropout-in-eval" not in lab_two


@pytest.mark.parametrize("lab, mistake", cases())
def test_a_report_of_one_lab_quotes_no_name_of_the_other(lab, mistake):
    _, part, foreign = LABS[lab]
    check = Check(f"{part}.values", part, 2.0, "hidden", "值", "values", lambda ctx: None)
    report = build_report([(check, Outcome(False, "错。", "Wrong.", [mistake]))])
    for lang in ("zh", "en"):
        shown = render_text(report, lang)
        assert explain(mistake, lang) in shown
        quoted = [name for name in foreign if named(name, shown)]
        assert not quoted, f"a {lab} report of {mistake} ({lang}) names {quoted}:\n{explain(mistake, lang)}"


@pytest.mark.parametrize("mistake", sorted(diagnosed("mutants") & diagnosed("kv_cache/mutants")))
def test_an_id_both_labs_diagnose_names_no_part_by_its_number(mistake):
    for lang in ("zh", "en"):
        text = explain(mistake, lang)
        assert not PART_NUMBER.search(text), f"{mistake} ({lang}) names a part by number:\n{text}"
