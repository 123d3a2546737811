"""The one reporting layer: turns check outcomes and their metadata into the report (grader.report.text reads it).

A report is language-neutral: every text is there in both languages (`title_zh`/`title_en`,
`message_zh`/`message_en`), so grading and its cache never depend on who reads the result.
`in_language` projects it to the JSON contract (docs/reading-a-report.md) at the edge: score, max_score,
checks[{id, part, passed, points, max_points, message, mistakes}], mistakes (most important to
fix first, grader.catalog.FIX_FIRST), advice (ids that cost no point). Extensions: each check's
title, visibility and the student line involved; the isolation layers that were missing;
`refused`, the mistake id of a hand-in that was not graded at all (too large, a link, not a notebook);
`review`, the checks the grader could not judge (catalog.REVIEW_BY_HAND), for a person.

Text that came from the hand-in (exception messages, code lines, file names) is made printable
here (grader.handin.clean_text), once, so no consumer of a report (terminal, log, page) sees a control character.
"""
from __future__ import annotations

import dataclasses

from grader.handin import places
from grader.catalog import REVIEW_BY_HAND, explain, fix_first
from grader.checks import PARTS, Check, Outcome
from grader.handin.clean_text import printable
from grader.handin.source import Refusal

LANGUAGES = ("zh", "en")


def message(outcome: Outcome, lang: str) -> str:
    """What held or failed, the student line involved, then each diagnosed mistake explained."""
    text = outcome.zh if lang == "zh" else outcome.en
    lines = [text] if text else []
    where = outcome.where
    if where and where.get("text"):
        place = places.place(where, lang)
        lines.append(f"出错的代码（{place}）：{where['text']}" if lang == "zh" else f"your code ({place}): {where['text']}")
    lines += [explain(mistake, lang) for mistake in outcome.mistakes + outcome.advice]
    return "\n".join(lines)


def not_counted(outcome: Outcome, gates: list[str]) -> Outcome:
    """A check that held in a part a failed gate zeroes: its message says first that it earns nothing and why, so
    no report scores it 0 under words that only say it passed."""
    if not outcome.passed or not gates:
        return outcome
    listed = ", ".join(gates)
    return dataclasses.replace(outcome, zh=f"不计分：{listed} 未通过，本部分记 0 分。本项本身成立：{outcome.zh}",
                               en=f"Not counted: {listed} failed, so this part scores 0. This check itself held: "
                                  f"{outcome.en}")


def check_entry(check: Check, outcome: Outcome, gates: list[str] = ()) -> dict:
    """`gates`: the failed gates of the check's part (each zeroes it). A check with points passes only when it earns
    them: one that held under a failed gate is `passed: false` and `not_counted`, so no reader (pytest, Gradescope, a
    script) sees a pass worth 0."""
    points = check.points if outcome.passed and not gates else 0.0
    zeroed = bool(check.points and outcome.passed and gates)
    if check.points:
        outcome = not_counted(outcome, list(gates))
    where = outcome.where
    if where and where.get("text"):
        where = {**where, "text": printable(where["text"], keep_newlines=False)}
    return {
        "id": check.id, "part": check.part, "title_zh": check.title_zh, "title_en": check.title_en,
        "visibility": check.visibility, "passed": bool(outcome.passed) and not zeroed, "points": float(points),
        "max_points": float(check.points), "mistakes": list(outcome.mistakes),
        **{f"message_{lang}": printable(message(outcome, lang)) for lang in LANGUAGES}, "where": where,
        **({"figure": outcome.figure} if outcome.figure else {}),
        **({"error": printable(outcome.error, keep_newlines=False)} if outcome.error else {}),
        **({"advice": outcome.advice} if outcome.advice else {}),
        # not run, or failed only because another check did ("Not checked: needs correct values"): no root cause
        **({"not_checked": True} if outcome.cause == "cascade" else {}),
        **({"not_counted": True} if zeroed else {}),  # held, but a failed gate of its part zeroes it
    }


def build_report(results: list[tuple[Check, Outcome]], extras: dict | None = None) -> dict:
    failed_gates = {}
    for c, o in results:
        if c.gate and not o.passed:
            failed_gates.setdefault(c.part, []).append(c.id)
    return summarised([check_entry(c, o, failed_gates.get(c.part, [])) for c, o in results], extras)


def summarised(checks: list[dict], extras: dict | None = None) -> dict:
    """The report of these check entries: the score, the mistakes and the review list are theirs."""
    mistakes = fix_first(m for c in checks for m in c["mistakes"])
    report = {
        "score": round(sum(c["points"] for c in checks), 4),
        "max_score": round(sum(c["max_points"] for c in checks), 4),
        "checks": checks,
        "mistakes": mistakes,
        "advice": [m for m in fix_first(m for c in checks for m in c.get("advice", [])) if m not in mistakes],
    }
    review = [c["id"] for c in checks if set(c["mistakes"]) & set(REVIEW_BY_HAND)]
    if review:  # checks the grader could not judge: a person looks (grade-all lists these hand-ins)
        report["review"] = review
    report.update(extras or {})
    return report


def spliced(original: dict, regraded: dict, parts: set[str]) -> dict:
    """A regrade that ran only `parts`' checks (grader.fixes.reach), completed with the original's entries of the
    other parts, in the original's order. Checks of no part (integrity) come from the run that failed them, or from
    the regrade; the regrade's extras are kept."""
    fresh = {c["id"]: c for c in regraded["checks"]}
    checks = []
    for check in original["checks"]:
        if check["part"] in PARTS:
            checks.append(fresh.get(check["id"], check) if check["part"] in parts else check)
        else:  # of no part (integrity): both runs had it, and a failure in either is kept
            checks.append(fresh.get(check["id"], check) if check["passed"] else check)
    extras = {key: value for key, value in regraded.items() if key not in ("score", "max_score", "checks", "mistakes",
                                                                          "advice", "review")}
    return summarised(checks, extras)


def refused_report(refusal: Refusal, checks: list[Check]) -> dict:
    """A hand-in refused before it was parsed: every check fails with no points. The first check of each
    part says why (the catalog's explanation and fix), the others only point to it."""
    first_of_part: set[str] = set()
    results = []
    for check in checks:
        if check.part not in first_of_part:
            first_of_part.add(check.part)
            outcome = Outcome(False, f"没有评分：{refusal.zh}", f"Not graded: {refusal.en}", [refusal.mistake])
        else:
            outcome = Outcome(False, "没有评分（原因见本部分第一项）。", "Not graded (see this part's first check).")
        results.append((check, outcome))
    return build_report(results, {"refused": refusal.mistake})
