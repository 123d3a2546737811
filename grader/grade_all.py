"""`python -m grader grade-all DIR --jobs N --json OUT`: grade a whole class.

Submissions are graded in parallel, each in its own confined worker forked from one fork
server that imported torch once, so a submission costs a fork rather than an interpreter and a
torch import. Every submission gets a report, whatever it does; results do not depend on --jobs.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader.grade import grade_submission

SUFFIXES = (".ipynb", ".py")


def find_submissions(root: Path) -> list[tuple[str, Path]]:
    """(student, file) pairs: files directly in DIR are students of their own; in DIR/<student>/…
    the student's notebook is taken (else a .py), whatever it is called."""
    found = []
    for entry in sorted(root.iterdir()):
        if entry.is_file() and entry.suffix in SUFFIXES:
            found.append((entry.stem, entry))
        elif entry.is_dir() and not entry.name.startswith("."):
            files = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                           and ".ipynb_checkpoints" not in p.parts)
            notebooks = [p for p in files if p.suffix == ".ipynb"]
            if notebooks or files:
                found.append((entry.name, (notebooks or files)[0]))
    return found


def grade_one(student: str, path: Path, lang: str) -> dict:
    try:
        report = grade_submission(path, lang=lang)
    except Exception as error:  # an unreadable file still gets a row
        report = {"score": 0.0, "max_score": 20.0, "checks": [], "mistakes": [],
                  "error": f"{type(error).__name__}: {error}"}
    return {"submission": str(path), "student": student, **report}


def class_summary(reports: list[dict], lang: str) -> str:
    """Score distribution and the mistakes to re-teach, most frequent first."""
    zh = lang == "zh"
    lines = [f"{'学生数' if zh else 'Submissions'}: {len(reports)}"]
    if not reports:
        return lines[0]
    scores = [r["score"] for r in reports]
    top = max(r["max_score"] for r in reports) or 20.0
    lines.append(f"{'平均分' if zh else 'Mean'}: {sum(scores) / len(scores):.2f} / {top:g}   "
                 f"{'满分人数' if zh else 'Full marks'}: {sum(s == top for s in scores)}")
    bins = Counter(min(int(s / top * 5), 4) for s in scores)
    for b in range(5):
        low, high = b * top / 5, (b + 1) * top / 5
        lines.append(f"  [{low:4.0f}, {high:4.0f}{']' if b == 4 else ')'} {'#' * bins[b]} {bins[b]}")
    mistakes = Counter(m for r in reports for m in r["mistakes"])
    if mistakes:
        lines.append("最常见的错误（建议重讲）:" if zh else "Most frequent mistakes (worth re-teaching):")
        lines += [f"  {count:3d}  {mistake}" for mistake, count in mistakes.most_common(10)]
    return "\n".join(lines)


def grade_class(root: Path, jobs: int = 1, lang: str = "zh", progress: bool = False) -> list[dict]:
    submissions = find_submissions(root)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(submissions), unit="submission", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(grade_one, student, path, lang) for student, path in submissions]
        reports = []
        for future in futures:
            reports.append(future.result())
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return reports


def main(*, dir: str, jobs: int = 1, json_out: str | None = None, lang: str = "zh") -> int:
    root = Path(dir)
    if not root.is_dir():
        print(f"grader: no such directory: {dir}", file=sys.stderr)
        return 2
    reports = grade_class(root, jobs, lang, progress=sys.stderr.isatty())
    if json_out:
        Path(json_out).write_text(json.dumps(reports, ensure_ascii=False, indent=1), encoding="utf-8")
    for report in reports:
        print(f"{report['student']:<24} {report['score']:5g} / {report['max_score']:g}  {', '.join(report['mistakes'])}")
    print()
    print(class_summary(reports, lang))
    return 0
