"""Verified fixes: try a catalog mistake's mechanical fix on a copy of the student's code, regrade the
copy in the sandbox with the same checks, and show the fix only if that regrade says it helps.

Nothing here predicts: a fix is shown because the edited copy, graded like any submission (the
rules, the sandbox, every check), earned more points, and the checks it names are the ones that
regrade passed. The edit is the student's own line changed minimally (grader.fixes.candidates),
shown as that line, so no solution leaks.

Cost: only a submission that lost points on a mistake with a rule is searched, with at most
MAX_TRIES candidates alone and one regrade of the helpful ones together; where none helps alone
(two bugs behind one check: no scaling and the diagonal masked), one regrade of them all together,
shown as one joint fix. Each regrade goes through the report cache like any grading.

Time: the search and what it looks behind get what the hand-in has left of its one budget (the 60 s a submission
may take, grader.grade.Grading.left), never a clock of their own. A regrade that would start with nothing left, or
that runs out of it, raises `OutOfTime`: the search stops there, keeps what it verified, and the report's
`fix_search` says in both languages that time cut it short and which fixes were not tried.

Fix credit (the instructor's `--fix-credit FRACTION`, default 0): per part, the part's score
becomes original + FRACTION * (fixed - original), never less than the original. Per part because
nbgrader keeps one grade per part (its test cell) and a part is where a fix lives; `checks` keep
their strict verdicts and points, `score` includes the credit, `fix_credit` says how much.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from grader.handin.clean_text import printable
from grader.handin.places import place as where
from grader.fixes import behind as crash_behind
from grader.fixes.candidates import Candidate, candidates
from grader.fixes.rewrites import REWRITES
from grader.handin.source import Submission

MAX_TRIES = 3
"""Candidates tried alone per submission (plus one regrade of the helpful ones together)."""
ALWAYS_TRIED = ("bare-matmul", "dropout-lowercase", "misspelled-tensor", "is-causal-typo")
"""Mistakes whose static evidence is exact text: tried when something failed, even if a cascade
(a crash of one part, say) hid them from the diagnosis."""


class OutOfTime(Exception):
    """A regrade the hand-in's budget had no time left for, or ran out of time in."""


class Regrading(Protocol):
    """What the search needs of a grading (grader.grade.Grading): the hand-in, its static pass, and a regrade of an
    edited copy with the same checks, limits and cache."""

    submission: Submission
    static: dict[str, list]
    checks: list  # grader.checks.Check: the gates tell which parts crashed
    limits: Any  # grader.sandbox.confinement.Limits: its submission_seconds is the budget the search shares

    def regrade(self, copy: Submission) -> dict: ...


def passed_checks(report: dict) -> set[str]:
    return {c["id"] for c in report["checks"] if c["passed"]}


def part_points(report: dict) -> dict[str, float]:
    points: dict[str, float] = {}
    for check in report["checks"]:
        points[check["part"]] = points.get(check["part"], 0.0) + check["points"]
    return points


def _checks_score(report: dict) -> float:
    return round(sum(c["points"] for c in report["checks"]), 4)


NOT_SEARCHED = {"timeout", "memory-limit", "tampering", "submission-too-costly"}
"""Code that ran out of its limits (the worker's, or the grader's budget for judging its graphs) or tampered: each
regrade would cost the whole limit again."""


def fixable(report: dict, static: dict[str, list]) -> list[str]:
    """The mistakes worth a regrade, most important first: diagnosed ones with a rule, then exact static ones."""
    if report.get("refused") or _checks_score(report) >= report["max_score"] or NOT_SEARCHED & set(report["mistakes"]):
        return []
    diagnosed = [m for m in report["mistakes"] if m in REWRITES]
    return diagnosed + [m for m in ALWAYS_TRIED if m in static and m not in diagnosed]


def failing_parts(report: dict) -> dict[str, list[str]]:
    """Mistake id -> the parts whose failed checks it was diagnosed in."""
    parts: dict[str, list[str]] = {}
    for check in report["checks"]:
        for mistake in check["mistakes"]:
            if not check["passed"] and check["part"] not in parts.setdefault(mistake, []):
                parts[mistake].append(check["part"])
    return parts


def edited(submission: Submission, edits: list[Candidate]) -> Submission:
    source = submission.source
    for candidate in edits:
        source = candidate.apply(source)
    return dataclasses.replace(submission, source=source)


def gains(original: dict, regraded: dict) -> tuple[list[str], float]:
    """The checks the regrade passes that the original failed, and the points it gained."""
    before = passed_checks(original)
    newly = [c["id"] for c in regraded["checks"] if c["passed"] and c["id"] not in before and c["points"] > 0]
    return newly, round(_checks_score(regraded) - _checks_score(original), 4)


def search(grading: Regrading, report: dict, not_tried: list[str] | None = None) -> tuple[list[dict], dict | None]:
    """Verified fixes (report entries) and the regrade of them all together (None when there is none). Where the
    hand-in's time runs out, the search stops with what it verified, and `not_tried` gets the mistake id of each
    candidate it did not regrade (a joint regrade: its ids joined by "+")."""
    submission = grading.submission
    mistakes = fixable(report, grading.static)
    if not mistakes:
        return [], None
    not_tried = [] if not_tried is None else not_tried
    tried = candidates(submission.source, mistakes, failing_parts(report), submission.exercise.graded_name)[:MAX_TRIES]
    helpful = []
    for number, candidate in enumerate(tried):
        try:
            regraded = verified(grading, report, candidate)
        except OutOfTime:
            not_tried += [c.mistake for c in tried[number:]]
            return _found(submission, report, helpful)
        if regraded is not None:
            helpful.append((candidate, regraded))
    if not helpful:
        joint = jointly(tried)
        try:
            regraded = joint and verified(grading, report, joint)
        except OutOfTime:
            not_tried.append("+".join([joint.mistake, *joint.also]))
            return [], None
        return ([entry(submission, joint, *gains(report, regraded))], regraded) if regraded else ([], None)
    found, best = _found(submission, report, helpful)
    if len(helpful) > 1:
        try:
            together = grading.regrade(edited(submission, [c for c, _ in helpful]))
        except OutOfTime:
            not_tried.append("+".join(c.mistake for c, _ in helpful))
            return found, best
        if _checks_score(together) >= _checks_score(best):
            best = together
    return found, best


def _found(submission: Submission, report: dict, helpful: list[tuple[Candidate, dict]]) -> tuple[list[dict], dict | None]:
    """The entries of the helpful candidates, and the best of their regrades (None when there is none)."""
    if not helpful:
        return [], None
    return ([entry(submission, c, *gains(report, r)) for c, r in helpful],
            max((r for _, r in helpful), key=_checks_score))


def jointly(tried: list[Candidate]) -> Candidate | None:
    """The candidates as one fix (each line edited once), named by the first mistake with the others in `also`;
    None for fewer than two or when two edit the same line."""
    lines = [edit.line for candidate in tried for edit in candidate.edits]
    if len(tried) < 2 or len(lines) != len(set(lines)):
        return None
    edits = tuple(sorted((edit for candidate in tried for edit in candidate.edits), key=lambda edit: edit.line))
    return Candidate(tried[0].mistake, edits, tuple(c.mistake for c in tried[1:]))


def verified(grading: Regrading, report: dict, candidate: Candidate) -> dict | None:
    """The regrade of the edited copy if it passes a check the original failed and earns more; else None.
    The regrade's own verdict, nothing else, decides."""
    regraded = grading.regrade(edited(grading.submission, [candidate]))
    newly, points = gains(report, regraded)
    return regraded if newly and points > 0 else None


def entry(submission: Submission, candidate: Candidate, checks: list[str], points: float) -> dict:
    places = []
    for edit in candidate.edits:
        place = submission.locate({"line": edit.line, "text": edit.after}) or {"line": edit.line}
        places.append({"line": place["line"], **({"cell": place["cell"]} if place.get("cell") else {}),
                       **({"defines": place["defines"]} if place.get("defines") else {}),
                       "before": printable(edit.before.strip(), keep_newlines=False),
                       "after": printable(edit.after.strip(), keep_newlines=False)})
    return {**places[0], "edits": places, "mistake": candidate.mistake, "mistakes": [candidate.mistake, *candidate.also],
            "checks": checks, "points": points,
            "message_zh": message(places, checks, points, "zh"), "message_en": message(places, checks, points, "en")}


def message(places: list[dict], checks: list[str], points: float, lang: str) -> str:
    """The gain first, then each line as it should read: "只需改一行即可多得 10 分：第 57 行 → `…`"."""
    edits = [f"{where(p, lang)} → `{p['after']}`" for p in places]
    one = len(places) == 1
    if lang == "zh":
        lead = f"{'只需改一行' if one else f'改 {len(places)} 行'}即可多得 {points:g} 分"
        return f"{lead}：{'；'.join(edits)}（会通过的检查：{', '.join(checks)}）。"
    unit = "point" if points == 1 else "points"
    lead = f"Change {'one line' if one else f'{len(places)} lines'} to gain {points:g} {unit}"
    return f"{lead}: {'; '.join(edits)} (checks that pass: {', '.join(checks)})."


def credit(report: dict, fixed: dict | None, fraction: float) -> dict:
    """`fix_credit`: per part, fraction * (fixed - original) points, never negative."""
    by_part: dict[str, float] = {}
    if fixed is not None and fraction > 0:
        before, after = part_points(report), part_points(fixed)
        for part, points in after.items():
            gained = round(fraction * max(0.0, points - before.get(part, 0.0)), 4)
            if gained > 0:
                by_part[part] = gained
    return {"fraction": fraction, "points": round(sum(by_part.values()), 4), "by_part": by_part}


def unsearched(report: dict, fraction: float = 0.0) -> dict:
    """The report of a hand-in nothing of which ran (refused): no fix, no credit, the fields all the same."""
    return {**report, "fixes": [], "fix_credit": credit(report, None, fraction), "found_behind": []}


def found_behind(report: dict, fixed: dict | None, found: list[dict]) -> list[dict]:
    """The mistakes the regrade of the verified fixes names that the original did not: bugs a crash or a first
    bug hid (a hard-coded "cuda" in front of a head-split), each marked with the fixes it was found behind."""
    if fixed is None:
        return []
    fronts = list(dict.fromkeys(f["mistake"] for f in found))
    return [{"mistake": m, "behind": fronts} for m in fixed["mistakes"] if m not in report["mistakes"]]


def behind_errors(grading: Regrading, report: dict, fixed: dict | None, found: list[dict],
                  not_tried: list[str] | None = None) -> tuple[list[dict], list[dict]]:
    """The report's checks, each crash's gate with its `behind_error` and a sentence on it in both languages; and the
    `found_behind` entries of what the mended copies name ({"mistake", "behind": [the crash's ids, or the exception's
    name when the crash has none]}). Where the hand-in's time runs out, no crash is looked behind, and `not_tried`
    gets "behind:" and the gate check of each crash."""
    gates = {c.id for c in grading.checks if c.gate}
    try:
        looked = crash_behind.look_behind(grading, report, lambda c: grading.regrade(edited(grading.submission, [c])),
                                          gates, fixed, found)
    except OutOfTime:
        if not_tried is not None:
            not_tried += [f"behind:{gate}" for gate in crash_behind.crashes(report, gates)]
        return report["checks"], []
    checks, entries = [], []
    for check in report["checks"]:
        behind = looked.get(check["id"])
        if behind is None:
            checks.append(check)
            continue
        checks.append({**check, "behind_error": behind,
                       **{f"message_{lang}": check[f"message_{lang}"] + "\n" + crash_behind.said(behind, lang)
                          for lang in ("zh", "en")}})
        fronts = check["mistakes"] or [check["error"].split(":")[0]]
        entries += [{"mistake": m, "behind": fronts} for m in behind["mistakes"]]
    return checks, entries


def with_fixes(grading: Regrading, report: dict, fraction: float = 0.0) -> dict:
    """`report` (the grading's own) plus `fixes`, `fix_credit` (score raised by the credit, capped at max_score) and
    `found_behind` (named in `mistakes` too, after the report's own): behind the verified fixes, and behind each crash
    of a part (its gate check's `behind_error`)."""
    not_tried: list[str] = []
    found, fixed = search(grading, report, not_tried)
    granted = credit(report, fixed, fraction)
    score = min(report["max_score"], round(_checks_score(report) + granted["points"], 4))
    behind = found_behind(report, fixed, found)
    checks, after_crashes = behind_errors(grading, report, fixed, found, not_tried)
    behind += [b for b in after_crashes if b["mistake"] not in {seen["mistake"] for seen in behind}]
    searched = {"fix_search": cut_short(not_tried, grading.limits.submission_seconds)} if not_tried else {}
    return {**report, "score": score, "checks": checks, "fixes": found, "fix_credit": granted, "found_behind": behind,
            "mistakes": report["mistakes"] + [m for m in dict.fromkeys(b["mistake"] for b in behind)
                                              if m not in report["mistakes"]], **searched}


def cut_short(not_tried: list[str], seconds: float) -> dict:
    """The report's `fix_search` where the hand-in's time ran out in it: what was not tried, said in both languages."""
    fixes_left = [m for m in not_tried if not m.startswith("behind:")]
    parts_left = [m.removeprefix("behind:") for m in not_tried if m.startswith("behind:")]
    zh = [f"以下修改没有尝试：{', '.join(fixes_left)}" if fixes_left else "",
          f"没有查看这些部分的报错背后还有什么错误：{', '.join(parts_left)}" if parts_left else ""]
    en = [f"these fixes were not tried: {', '.join(fixes_left)}" if fixes_left else "",
          f"what the error of these parts hides was not looked for: {', '.join(parts_left)}" if parts_left else ""]
    return {"cut_short": "time", "not_tried": not_tried,
            "message_zh": f"修改建议的搜索因时间用尽而提前停止：这份提交的 {seconds:g} 秒评分时间（包括重新评分修改后的副本）"
                          f"已经用完；{'；'.join(z for z in zh if z)}。",
            "message_en": f"The search for fixes was cut short by time: this submission's {seconds:g} s (its grading "
                          f"and every regrade of an edited copy together) ran out; {'; '.join(e for e in en if e)}."}
