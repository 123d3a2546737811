"""A stored report as people read it: the JSON contract in one language (`in_language`) and the text the CLI,
the nbgrader test cell and the pytest plugin print (`render_text`), the verified fixes first.

Reading a report needs no grader: nothing here imports torch, the sandbox or the checks, so showing a
stored report (a cached one, one from grade-all's JSON) costs no torch import (tests/report/test_report_text.py).
Text that came from the hand-in is made printable again on the way out (grader.handin.clean_text).
"""
from __future__ import annotations

from grader.handin import places
from grader.exercises import every_part
from grader.catalog import explained_once
from grader.handin.clean_text import printable
from grader.report.repeats import repeated_messages

PARTS = {part.id: part.label for part in every_part()}  # part id -> its heading
BOTH = ("zh", "en")
"""The languages of a text both kinds of student read (the nbgrader cell, the pytest plugin, Gradescope)."""


def in_language(report: dict, lang: str) -> dict:
    """The report as the JSON contract has it: each check's `title` and `message` in `lang` (both languages
    stay, as `title_zh`/`title_en` and `message_zh`/`message_en`); each verified fix's `message` too."""
    projected = {**report, "checks": [{"id": c["id"], "part": c["part"], "title": c[f"title_{lang}"], **c,
                                       "message": c[f"message_{lang}"]} for c in report["checks"]]}
    if "fixes" in report:
        projected["fixes"] = [{**f, "message": f[f"message_{lang}"]} for f in report["fixes"]]
    if "fix_search" in report:
        projected["fix_search"] = {**report["fix_search"], "message": report["fix_search"][f"message_{lang}"]}
    return projected


def said(zh: str, en: str, langs: tuple[str, ...]) -> str:
    """One phrase in the languages shown, Chinese first: `zh`, `en`, or `zh · en`."""
    return " · ".join({"zh": zh, "en": en}[lang] for lang in langs)


def render_text(report: dict, lang: str) -> str:
    """The readable report in one language (as the CLI prints it): the verified fixes first, then per part, per
    check, with the diagnosis under each failure; what several checks met is said once, under the first."""
    langs = (lang,)
    out = []
    explained: set[tuple[str, str]] = set()
    if report.get("submission"):
        out.append(printable(report["submission"], keep_newlines=False))
    fixes = fix_lines(report, langs)
    if fixes:
        out += ["", *fixes]
    if report.get("fix_search"):
        out += ["", said(report["fix_search"]["message_zh"], report["fix_search"]["message_en"], langs)]
    for part, title in PARTS.items():
        checks = [c for c in report["checks"] if c["part"] == part]
        if checks:
            got, top = sum(c["points"] for c in checks), sum(c["max_points"] for c in checks)
            out.append(f"\n== {title}  {got:g}/{top:g} ==")
            out += part_lines(checks, langs, explained, indent="  ")
    for c in (c for c in report["checks"] if c["part"] not in PARTS and not c["passed"]):
        out.append(f"\n✗ {c['id']}: " + c[f"message_{lang}"].replace("\n", "\n   "))
    out.append(f"\n{said('总分：', 'Score: ', langs)}{report['score']:g} / {report['max_score']:g}")
    if report["mistakes"]:
        out.append(said("诊断出的错误（先改排在前面的）：", "Mistakes found (most important first): ", langs)
                   + ", ".join(report["mistakes"]))
    if report.get("advice"):
        out.append(said("建议（不扣分）：", "Advice (no points lost): ", langs) + ", ".join(report["advice"]))
    if report.get("isolation_missing"):
        out.append(said("隔离不完整：", "Isolation incomplete: ", langs) + "; ".join(report["isolation_missing"]))
    return printable("\n".join(out))  # also a report from an older cache, or built elsewhere


def part_lines(checks: list[dict], langs: tuple[str, ...], explained: set[tuple[str, str]], indent: str = "") -> list[str]:
    """One part's checks: a failed gate (no point of its own) zeroes the part, so the checks that held there
    earn nothing; a message several checks met is said under the first, the others listed there. A catalog
    explanation met again is referred to by its title in one language, as "(explained above)" in both (whose
    lines are long enough)."""
    gates = [c["id"] for c in checks if not c["passed"] and not c["max_points"]]
    same_as, repeats = repeated_messages(checks)
    out = []
    for c in checks:
        out += check_lines(c, langs, explained, gates, same_as.get(c["id"]), repeats.get(c["id"], []), indent)
    return out


def check_lines(c: dict, langs: tuple[str, ...], explained: set[tuple[str, str]], gates: list[str] = (),
                same_as: str | None = None, repeated_in: list[str] = (), indent: str = "") -> list[str]:
    """One check: its line (mark, points, id, title), then its message in each language unless an earlier check
    (`same_as`) said it; a mistake's catalog explanation is printed the first time only (`explained` remembers)."""
    # held under a failed gate (`not_counted`; a report cached before that field: passed with 0 of its points)
    zeroed = c.get("not_counted") or (c["passed"] and gates and c["max_points"] and not c["points"])
    mark = "○" if zeroed else "✓" if c["passed"] else "✗"
    points = f"[{c['points']:g}/{c['max_points']:g}]" if c["max_points"] else said("前提（不计分）", "prerequisite", langs)
    title = " · ".join(c[f"title_{lang}"] for lang in langs)
    listed = ", ".join(gates)
    # without the part's gates at hand (one check alone: the pytest plugin) the message itself names the gate
    why = f"  {said(f'（不计分：{listed} 未通过）', f'(not counted: {listed} failed)', langs)}" if zeroed and gates else ""
    if same_as:
        why = f"  {said(f'同上，见 {same_as}', f'same as {same_as}', langs)}"
    lines = [f"{indent}{mark} {points} {c['id']}  {title}{why}"]
    if same_as or ((c["passed"] or (zeroed and gates)) and not c["mistakes"] and not c.get("advice")):
        return lines
    body = indent + "    "
    for lang in langs:
        text = c[f"message_{lang}"]
        lines += [body + line for line in explained_once(text, c["mistakes"] + c.get("advice", []), lang, explained,
                                                         with_title=len(langs) == 1)]
    if repeated_in:
        count, plural = len(repeated_in), "s" if len(repeated_in) > 1 else ""
        lines.append(body + said(f"同样的问题还让这 {count} 项检查未通过：", f"The same problem failed {count} more "
                                 f"check{plural}: ", langs) + ", ".join(repeated_in))
    return lines


def fix_lines(report: dict, langs: tuple[str, ...], part: str | None = None) -> list[str]:
    """The verified fixes (of `part`'s checks, when given), what they found behind, and the credit, as lines."""
    part_of_check = {c["id"]: c["part"] for c in report["checks"]}
    fixes = [f for f in report.get("fixes") or [] if part is None or part in {part_of_check.get(c) for c in f["checks"]}]
    if not fixes:
        return []
    out = fixes_said(fixes, langs)
    for behind in report.get("found_behind") or []:
        fronts = ", ".join(behind["behind"])
        out.append("  " + said(f"修改之后还发现：[{behind['mistake']}]（藏在 {fronts} 后面）",
                               f"Found behind {fronts} once fixed: [{behind['mistake']}]", langs))
    granted = report.get("fix_credit") or {}
    points = granted.get("by_part", {}).get(part) if part else granted.get("points")
    if points:
        out.append("  " + said(f"修改后多得分数的 {granted['fraction']:g} 计入{'本部分' if part else '总分'}：+{points:g}",
                               f"{granted['fraction']:g} of the points the fixed code earns count"
                               f"{' here' if part else ''}: +{points:g}", langs))
    return out


def fixes_said(fixes: list[dict], langs: tuple[str, ...]) -> list[str]:
    """Verified fixes as every report words them: the heading, each fix in each language, and where a fix names
    a notebook cell, how to show Colab's line numbers."""
    out = [said("验证过的修改（已在评分沙盒中重新评分确认）：", "Verified fixes (regraded in the sandbox):", langs)]
    for fix in fixes:
        out += [f"  {'-' if n == 0 else ' '} {fix[f'message_{lang}']}" for n, lang in enumerate(langs)]
    if any(edit.get("cell") or edit.get("defines") for fix in fixes for edit in fix.get("edits", [fix])):
        out.append("  " + " ".join(places.LINE_NUMBERS_HINT[lang] for lang in langs))
    return out
