"""The mistake catalog: stable ids with a zh and an en explanation and fix (data in mistakes.json).

Each entry also says which group it belongs to when a student reads a report top-down
(`fix_first`): a report lists its mistakes in the order of `FIX_FIRST`, and within a group in
the catalog's own order. A new id needs only its `fix_first` line.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable

CATALOG_FILE = Path(__file__).with_name("mistakes.json")

FIX_FIRST = (
    "refused",  # nothing was graded: hand in a readable notebook first
    "rules",  # the part scores 0 whatever else it does
    "does-not-run",  # nothing after the crash can be checked
    "interface",  # the grader cannot call it the way the exercise says
    "values",  # wrong numbers: mask, scale, softmax, heads, gradients, dropout
    "device-and-speed",  # right on the CPU, wrong on a GPU or slow
    "advice",  # costs no point
)
"""Mistake groups, most important to fix first."""


REVIEW_BY_HAND = ("unsupported-op", "untraceable", "device-not-judged")
"""Mistakes that say the grader could not judge a part (an operator it does not run, values that left the tensor
operations, a device check no stand-in for a GPU could answer): maybe honest, so the class summary lists them for
a person (grade-all's text; each report's `review`)."""


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, str]]:
    return json.loads(CATALOG_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _fix_rank() -> dict[str, tuple[int, int]]:
    group = {name: index for index, name in enumerate(FIX_FIRST)}
    # an entry without a known group ranks last rather than break grading (tests/report/test_core_report.py requires one)
    return {mistake: (group.get(entry.get("fix_first"), len(FIX_FIRST)), position)
            for position, (mistake, entry) in enumerate(catalog().items())}


def rule_mistakes() -> tuple[str, ...]:
    """The ids of the catalog's `rules` group: code that broke a grading rule, whose part scores 0."""
    return tuple(mistake for mistake, entry in catalog().items() if entry.get("fix_first") == "rules")


def fix_first(mistakes: Iterable[str]) -> list[str]:
    """The distinct ids, most important to fix first; an id outside the catalog comes last."""
    rank = _fix_rank()
    return sorted(dict.fromkeys(mistakes), key=lambda m: rank.get(m, (len(FIX_FIRST), 0)))


def explain(mistake: str, lang: str) -> str:
    """One paragraph: title, what went wrong, how to fix it, in the requested language."""
    entry = catalog()[mistake]
    if lang == "zh":
        return f"[{mistake}] {entry['title_zh']}：{entry['explain_zh']}改法：{entry['fix_zh']}"
    return f"[{mistake}] {entry['title_en']}: {entry['explain_en']} Fix: {entry['fix_en']}"


EXPLAINED_ABOVE = {"zh": "（解释见上）", "en": "(explained above)"}
SEE_ABOVE = {"zh": "（见上）", "en": " (see above)"}  # after a title


def explained_once(text: str, mistakes: list[str], lang: str, explained: set[tuple[str, str]],
                   with_title: bool = False) -> list[str]:
    """A message's lines with each catalog explanation printed once: a line that is `explain(m, lang)` for a
    mistake already in `explained` becomes a reference to it (with its title where asked); first sightings
    are added."""
    explanations = {explain(m, lang): m for m in mistakes if m in catalog()}
    lines = []
    for line in text.splitlines():
        mistake = explanations.get(line)
        if mistake and (mistake, lang) in explained:
            reference = (catalog()[mistake][f"title_{lang}"] + SEE_ABOVE[lang]) if with_title else EXPLAINED_ABOVE[lang]
            line = f"[{mistake}] {reference}"
        elif mistake:
            explained.add((mistake, lang))
        lines.append(line)
    return lines
