"""The one reporting layer: turns check outcomes and their metadata into the report, and the report into text.

A report is language-neutral: every text is there in both languages (`title_zh`/`title_en`,
`message_zh`/`message_en`), so grading and its cache never depend on who reads the result.
`in_language` projects it to the JSON contract (docs/reading-a-report.md) at the edge: score, max_score,
checks[{id, part, passed, points, max_points, message, mistakes}], mistakes (most important to
fix first, grader.catalog.FIX_FIRST), advice (ids that cost no point). Extensions: each check's
title, visibility and the student line involved; the isolation layers that were missing;
`refused`, the mistake id of a hand-in that was not graded at all (too large, a link, not a notebook).

Text that came from the hand-in (exception messages, code lines, file names) is made printable
here (grader.clean_text), once, so no consumer of a report (terminal, log, page) sees a control character.
"""
from __future__ import annotations

from grader import places
from grader.repeats import repeated_messages
from grader.catalog import explain, explained_once, fix_first
from grader.checks import PARTS, Check, Outcome
from grader.clean_text import printable
from grader.fixes import render as render_fixes
from grader.source import Refusal

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


def check_entry(check: Check, outcome: Outcome, zeroed: bool) -> dict:
    points = check.points if outcome.passed and not zeroed else 0.0
    where = outcome.where
    if where and where.get("text"):
        where = {**where, "text": printable(where["text"], keep_newlines=False)}
    return {
        "id": check.id, "part": check.part, "title_zh": check.title_zh, "title_en": check.title_en,
        "visibility": check.visibility, "passed": bool(outcome.passed), "points": float(points),
        "max_points": float(check.points), "mistakes": list(outcome.mistakes),
        **{f"message_{lang}": printable(message(outcome, lang)) for lang in LANGUAGES}, "where": where,
        **({"figure": outcome.figure} if outcome.figure else {}),
        **({"error": printable(outcome.error, keep_newlines=False)} if outcome.error else {}),
        **({"advice": outcome.advice} if outcome.advice else {}),
        # not run, or failed only because another check did ("Not checked: needs correct values"): no root cause
        **({"not_checked": True} if outcome.cause == "cascade" else {}),
    }


def build_report(results: list[tuple[Check, Outcome]], extras: dict | None = None) -> dict:
    failed_gates = {c.part for c, o in results if c.gate and not o.passed}
    checks = [check_entry(c, o, c.part in failed_gates) for c, o in results]
    mistakes = fix_first(m for c in checks for m in c["mistakes"])
    report = {
        "score": round(sum(c["points"] for c in checks), 4),
        "max_score": round(sum(c["max_points"] for c in checks), 4),
        "checks": checks,
        "mistakes": mistakes,
        "advice": [m for m in fix_first(m for c in checks for m in c.get("advice", [])) if m not in mistakes],
    }
    report.update(extras or {})
    return report


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


def in_language(report: dict, lang: str) -> dict:
    """The report as the JSON contract has it: each check's `title` and `message` in `lang` (both languages
    stay, as `title_zh`/`title_en` and `message_zh`/`message_en`); each verified fix's `message` too."""
    projected = {**report, "checks": [{"id": c["id"], "part": c["part"], "title": c[f"title_{lang}"], **c,
                                       "message": c[f"message_{lang}"]} for c in report["checks"]]}
    if "fixes" in report:
        projected["fixes"] = [{**f, "message": f[f"message_{lang}"]} for f in report["fixes"]]
    return projected


def render_text(report: dict, lang: str) -> str:
    """The readable report in one language: the verified fixes first, then per part, per check, with the
    diagnosis under each failure; what several checks met is said once, under the first, with the others listed."""
    zh = lang == "zh"
    out = []
    explained: set[tuple[str, str]] = set()
    if report.get("submission"):
        out.append(printable(report["submission"], keep_newlines=False))
    fixes = render_fixes(report, lang)
    if fixes:
        cells = any(edit.get("cell") or edit.get("defines") for f in report["fixes"] for edit in f.get("edits", [f]))
        out += ["", *fixes] + ([f"  {places.LINE_NUMBERS_HINT[lang]}"] if cells else [])
    for part, title in PARTS.items():
        checks = [c for c in report["checks"] if c["part"] == part]
        if not checks:
            continue
        got, top = sum(c["points"] for c in checks), sum(c["max_points"] for c in checks)
        out.append(f"\n== {title}  {got:g}/{top:g} ==")
        gates = [c["id"] for c in checks if not c["passed"] and not c["max_points"]]  # failed, the part zeroed
        same_as, repeats = repeated_messages(checks)
        for c in checks:
            out += check_text(c, lang, explained, gates, same_as.get(c["id"]), repeats.get(c["id"], []))
    others = [c for c in report["checks"] if c["part"] not in PARTS and not c["passed"]]
    for c in others:
        out.append(f"\n✗ {c['id']}: " + c[f"message_{lang}"].replace("\n", "\n   "))
    out.append(f"\n{'总分：' if zh else 'Score: '}{report['score']:g} / {report['max_score']:g}")
    if report["mistakes"]:
        out.append(("诊断出的错误（先改排在前面的）：" if zh else "Mistakes found (most important first): ")
                   + ", ".join(report["mistakes"]))
    if report.get("advice"):
        out.append(("建议（不扣分）：" if zh else "Advice (no points lost): ") + ", ".join(report["advice"]))
    if report.get("isolation_missing"):
        out.append(("隔离不完整：" if zh else "Isolation incomplete: ") + "; ".join(report["isolation_missing"]))
    return printable("\n".join(out))  # also a report from an older cache, or built elsewhere


def check_text(c: dict, lang: str, explained: set[tuple[str, str]], gates: list[str], same_as: str | None,
               repeated_in: list[str]) -> list[str]:
    """One check of `render_text`: its line, then its message unless an earlier check (`same_as`) said it."""
    zh = lang == "zh"
    zeroed = c["passed"] and gates and c["max_points"] and not c["points"]
    mark = "○" if zeroed else "✓" if c["passed"] else "✗"
    points = f"[{c['points']:g}/{c['max_points']:g}]" if c["max_points"] else ("前提（不计分）" if zh else "prerequisite")
    why = (f"  （不计分：{', '.join(gates)} 未通过）" if zh else f"  (not counted: {', '.join(gates)} failed)") if zeroed else ""
    if same_as:
        why = f"  同上，见 {same_as}" if zh else f"  same as {same_as}"
    lines = [f"  {mark} {points} {c['id']}  {c[f'title_{lang}']}{why}"]
    text = c[f"message_{lang}"]
    if same_as or not text or (c["passed"] and not c["mistakes"] and not c.get("advice")):
        return lines
    lines += ["      " + line for line in explained_once(text, c["mistakes"] + c.get("advice", []), lang, explained,
                                                          with_title=True)]
    if repeated_in:
        lines.append(f"      同样的问题还让这 {len(repeated_in)} 项检查未通过：{', '.join(repeated_in)}" if zh else
                     f"      The same problem failed {len(repeated_in)} more check{'s' if len(repeated_in) > 1 else ''}: "
                     f"{', '.join(repeated_in)}")
    return lines

