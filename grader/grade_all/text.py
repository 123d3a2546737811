"""The text renderer: the table of students and the class summary (what to re-teach)."""
from __future__ import annotations

import statistics
from collections import Counter

from grader.catalog import REVIEW_BY_HAND, catalog
from grader.handin.clean_text import printable
from grader.rules import RULE_MISTAKES


def class_summary(reports: list[dict], lang: str) -> str:
    """Score distribution, then what to re-teach: the most frequent mistakes (and, apart, the advice that
    cost no point) and the checks failed most often."""
    zh = lang == "zh"
    lines = [f"{'提交数' if zh else 'Submissions'}: {len(reports)}"]
    if not reports:
        return lines[0]
    scores = [r["score"] for r in reports]
    top = max(r["max_score"] for r in reports) or 1.0  # no report worth a point: none graded, each row says why
    lines.append(f"{'平均分' if zh else 'Mean'}: {statistics.mean(scores):.2f} / {top:g}   "
                 f"{'中位数' if zh else 'Median'}: {statistics.median(scores):g}   "
                 f"{'满分' if zh else 'Full marks'}: {sum(s >= top for s in scores)}   "
                 f"{'零分' if zh else 'Zero'}: {sum(s == 0 for s in scores)}")
    parts = {}
    for report in reports:
        for check in report["checks"]:
            got, most = parts.get(check["part"], (0.0, 0.0))
            parts[check["part"]] = (got + check["points"], most + check["max_points"])
    if parts:
        lines.append(("各部分得分率" if zh else "Per part") + ": " + "   ".join(
            f"{part} {100 * got / most:.0f}%" for part, (got, most) in parts.items() if most))
    lines.append("分数分布:" if zh else "Score distribution:")
    bins = Counter(min(int(s / top * 5), 4) for s in scores)
    width = max(bins.values())
    for b in range(5):
        low, high = b * top / 5, (b + 1) * top / 5
        bar = "#" * round(40 * bins[b] / width) if bins[b] else ""
        lines.append(f"  [{low:4g}, {high:4g}{']' if b == 4 else ')'} {bins[b]:4d} {bar}")
    for key, heading_zh, heading_en in (
            ("mistakes", "最常见的错误（建议重讲）:", "Most frequent mistakes (worth re-teaching):"),
            ("advice", "最常见的建议（不扣分）:", "Most frequent advice (no points lost):")):
        counts = Counter(m for r in reports for m in r.get(key, []))
        if counts:
            lines.append(heading_zh if zh else heading_en)
        lines += ranked_mistakes(counts, len(reports), zh)
    lines += verified_fixes(reports, zh)
    # root causes only: a check that was not run, failed only because another one did, or held under a failed gate
    failed = Counter((c["id"], c.get("title_zh" if zh else "title_en", "")) for r in reports for c in r["checks"]
                     if not c["passed"] and not c.get("not_checked") and not c.get("not_counted"))
    if failed:
        lines.append("最常失败的检查:" if zh else "Checks failed most often:")
        for (check, title), count in sorted(failed.items(), key=lambda item: (-item[1], item[0]))[:8]:
            lines.append(f"  {count:4d} {100 * count / len(reports):4.0f}%  {check:<24} {title}")
    refused = [r for r in reports if r.get("refused")]
    if refused:
        lines.append(f"{'未评分（提交被拒绝）' if zh else 'Not graded (hand-in refused)'} ({len(refused)}):")
        for r in refused:
            title = catalog().get(r["refused"], {}).get("title_zh" if zh else "title_en", "")
            lines.append(f"  {printable(r['student'], keep_newlines=False)}: {title} ({r['refused']})")
    lines += rule_breakers(reports, zh) + to_review(reports, zh)
    errors = [r for r in reports if r.get("error")]
    if errors:
        lines.append(f"{'评分程序无法评分' if zh else 'Could not be graded'} ({len(errors)}):")
        lines += [f"  {printable(r['student'], keep_newlines=False)}: {r['error']}" for r in errors]
    conflicting = [r for r in reports if r.get("conflicts")]
    if conflicting:
        lines.append(f"{'同一学号的多份提交（只评了最新的一份，其余保留未评）' if zh else 'Several hand-ins for one id (the newest graded, the others kept, not graded)'}"
                     f" ({len(conflicting)}):")
        lines += [f"  {printable(r['student'], keep_newlines=False)}: {printable(r['submission'], keep_newlines=False)}; "
                  f"{'另有' if zh else 'besides'}: {'; '.join(printable(p, keep_newlines=False) for p in r['conflicts'])}"
                  for r in conflicting]
    lines += incomplete_isolation(reports, zh)
    return printable("\n".join(lines))  # student names are file names, errors may quote them


def ranked_mistakes(counts: Counter, total: int, zh: bool, points: Counter | None = None) -> list[str]:
    """The ten most frequent ids: count, share of the class, id, the points they would add in total (where given),
    title."""
    known = catalog()
    lines = []
    for mistake, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]:
        title = known.get(mistake, {}).get("title_zh" if zh else "title_en", "")
        gain = f"+{points[mistake]:g}  " if points is not None else ""
        lines.append(f"  {count:4d} {100 * count / total:4.0f}%  {mistake:<20} {gain}{title}")
    return lines


def verified_fixes(reports: list[dict], zh: bool) -> list[str]:
    """How many students a verified fix was shown to, by mistake, and the points those fixes would add: the
    mistakes that cost a lot for a small slip (what `--fix-credit` would change). One-line fixes apart from
    those that change several lines, counted by the lines each fix edits."""
    lines = []
    for one_line in (True, False):
        students, points = Counter(), Counter()
        for r in reports:
            fixes = [fix for fix in r.get("fixes", []) if (len(fix.get("edits") or [fix]) == 1) == one_line]
            students.update({fix["mistake"] for fix in fixes})
            for fix in fixes:
                points[fix["mistake"]] += fix["points"]
        if not students:
            continue
        what_zh, what_en = ("一行修正", "one-line fixes") if one_line else ("多行修正", "fixes of several lines")
        lines.append(f"已验证的{what_zh}（学生自己的代码，改动最小）:  学生数  占比  错误  这些学生合计可多得的分数" if zh else
                     f"Verified {what_en} shown (the student's own lines, minimally edited): students, share, "
                     "mistake, points in total (those students together)")
        lines += ranked_mistakes(students, len(reports), zh, points)
    return lines


def incomplete_isolation(reports: list[dict], zh: bool) -> list[str]:
    """The students graded without every sandbox layer, after the layers they lacked (a line per set of layers):
    what to fix on the grading machine, and whose grading to repeat once it is fixed (docs/isolation.md)."""
    by_layers: dict[tuple[str, ...], list[str]] = {}
    for r in reports:
        if r.get("isolation_missing"):
            by_layers.setdefault(tuple(r["isolation_missing"]), []).append(printable(r["student"], keep_newlines=False))
    heading = "隔离不完整" if zh else "Graded with incomplete isolation"
    return [f"{heading} ({'; '.join(layers)}): {', '.join(students)}" for layers, students in by_layers.items()]


def rule_breakers(reports: list[dict], zh: bool) -> list[str]:
    """Tampering and broken grading rules, by student: they score 0 on the part, and need a person."""
    flagged = [(r.get("student", "?"), [m for m in r["mistakes"] if m in RULE_MISTAKES]) for r in reports]
    flagged = [(student, ids) for student, ids in flagged if ids]
    if not flagged:
        return []
    heading = "篡改或违反评分规则（请老师跟进）" if zh else "Tampering or broken grading rules (follow up)"
    return [f"{heading} ({len(flagged)}):"] + [f"  {student}: {', '.join(ids)}" for student, ids in flagged]


REVIEWED = REVIEW_BY_HAND


def to_review(reports: list[dict], zh: bool) -> list[str]:
    """Hand-ins the graph could not grade (an operator the grader does not run, values that left the tensor
    operations) or whose device check no stand-in for a GPU could judge (review by hand, or grade on a GPU):
    maybe honest, so a person looks."""
    flagged = [f"{printable(r.get('student', '?'), keep_newlines=False)}: "
               f"{', '.join(m for m in r['mistakes'] if m in REVIEWED)}" for r in reports
               if any(m in REVIEWED for m in r["mistakes"])]
    if not flagged:
        return []
    heading = "评分程序无法评判的部分（请老师人工复核）" if zh else "Parts the grader could not judge (review by hand)"
    return [f"{heading} ({len(flagged)}):"] + [f"  {student}" for student in flagged]


def table(reports: list[dict], gradebook: dict[str, tuple[float, float] | None] | None = None,
          differing: frozenset[str] = frozenset()) -> str:
    """A row per student: score, mistakes, the grader's error; with `gradebook`, the gradebook's score
    beside it, marked `≠` for the `differing` students."""
    width = max([len(r["student"]) for r in reports] + [8])
    rows = []
    for r in reports:
        row = f"{printable(r['student'], keep_newlines=False):<{width}} {r['score']:5g} / {r['max_score']:g}"
        if gradebook is not None:
            entry = gradebook.get(r["student"])
            row += f"   gradebook {'—' if entry is None else f'{entry[0]:g} / {entry[1]:g}':>9}"
            row += " ≠" if r["student"] in differing else ""
        note = ", ".join(r["mistakes"]) + (f"  [{r['error']}]" if r.get("error") else "")
        rows.append(f"{row}  {note}".rstrip())
    return printable("\n".join(rows))
