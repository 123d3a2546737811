"""A stored report as people read it: the JSON contract in one language (`in_language`) and the text the CLI,
the nbgrader test cell and the pytest plugin print (`render_text`), the verified fixes first.

Reading a report needs no grader: nothing here imports torch, the sandbox or the checks, so showing a
stored report (a cached one, one from grade-all's JSON) costs no torch import (tests/report/test_report_text.py).
Text that came from the hand-in is made printable again on the way out (grader.handin.clean_text).
"""
from __future__ import annotations

from grader.handin import places
from grader.assignment import PARTS as DECLARED_PARTS
from grader.catalog import explained_once
from grader.handin.clean_text import printable
from grader.report.repeats import repeated_messages

PARTS = {part.id: part.label for part in DECLARED_PARTS}  # part id -> its heading


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
    fixes = fix_lines(report, lang)
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


def fix_lines(report: dict, lang: str) -> list[str]:
    """The fixes and the credit, as lines of the text report."""
    fixes = report.get("fixes") or []
    if not fixes:
        return []
    zh = lang == "zh"
    out = ["验证过的修改（已在评分沙盒中重新评分确认）：" if zh else "Verified fixes (regraded in the sandbox):"]
    out += [f"  - {f['message_zh'] if zh else f['message_en']}" for f in fixes]
    for behind in report.get("found_behind") or []:
        fronts = ", ".join(behind["behind"])
        out.append(f"  修改之后还发现：[{behind['mistake']}]（藏在 {fronts} 后面）" if zh else
                   f"  Found behind {fronts} once fixed: [{behind['mistake']}]")
    granted = report.get("fix_credit") or {}
    if granted.get("points"):
        out.append(f"  修改后多得分数的 {granted['fraction']:g} 计入总分：+{granted['points']:g}" if zh else
                   f"  {granted['fraction']:g} of the points the fixed code earns count: +{granted['points']:g}")
    return out
