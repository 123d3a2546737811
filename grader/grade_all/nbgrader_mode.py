"""`grade-all COURSE --nbgrader ASSIGNMENT`: grade the course's submitted notebooks in parallel into the
report cache, then one `nbgrader autograde` writes the gradebook from it; check the two agree."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Iterator

from grader import exercises
from grader.errors import NbgraderFailed, CourseError, GradebookDisagrees
from grader.grade_all.folder import ended_twice, failed_report
from grader.grade_all.json_list import write_reports
from grader.grade_all.parallel import in_parallel, in_shard
from grader.grade_all.text import class_summary, table
from grader.handin.exercise_of import exercise_of
from grader.nbgrader.autograde_run import autograde_invocation, run_autograde
from grader.nbgrader.course import REPORT_CACHE_FOLDER, Course
from grader.nbgrader.earlier_collect import MANIFEST, read_manifest


def agrees(report: dict, entry: tuple[float, float] | None) -> bool:
    """The gradebook's total says what the report says (scaled if the notebook's points differ)."""
    if entry is None:
        return False
    score, maximum = entry
    expected = report["score"] * maximum / report["max_score"] if report["max_score"] else 0.0
    return abs(score - expected) < 1e-3


def grade_course(course: Course, jobs: int, shard: tuple[int, int] | None,
                 progress: bool) -> tuple[list[dict], list[str]]:
    """Sanitize (this thread) and grade (the pool) every notebook of the shard into the cache.
    Returns the reports and the students of the course outside the shard."""
    notebooks = course.notebooks()
    mine = [(s, p) for s, p in notebooks if in_shard(s, shard)]
    others = sorted({s for s, _ in notebooks} - {s for s, _ in mine})

    def sanitized() -> Iterator[tuple[str, Path, tuple | Exception]]:
        for student, path in mine:
            try:
                yield student, path, course.sanitized(path)
            except Exception as error:  # nbgrader fails on it too: the row says why
                yield student, path, error

    declared = exercises.declared(course.assignment)

    def work(item: tuple[str, Path, tuple | Exception]) -> dict:
        student, path, notebook = item
        if isinstance(notebook, Exception):
            report = failed_report(notebook, "nbgrader could not read it", declared or exercise_of(path, []))
        else:
            try:
                report = course.graded(*notebook)
            except Exception as error:
                report = failed_report(error, "grading failed", declared or exercise_of(path, []))
        return {"submission": str(path), "student": student, **report}

    reports = in_parallel(work, sanitized(), len(mine), jobs, progress, "notebook",
                          killed=lambda item: ended_twice(item[0], item[1], declared))
    return reports, others


def add_collect_conflicts(reports: list[dict], course_root: Path, assignment: str) -> None:
    """Mark the students whose hand-ins came from several LMS people (as the last zip_collect recorded it), so that
    the class summary lists the conflict too."""
    collected = read_manifest(course_root / "downloaded" / assignment / MANIFEST)
    for report in reports:
        conflict = collected.get(report["student"], {}).get("conflict")
        if conflict:
            report["conflicts"] = [conflict]


def grade_nbgrader_course(course_dir: Path, assignment: str, *, jobs: int, json_out: str | None, lang: str,
                          db_url: str | None, shard: tuple[int, int] | None, force: bool,
                          report_cache: Path | None, fix_credit: float | None = None) -> None:
    """`report_cache`: the cache folder, by default the course's autograded/.attention-kit-report-cache/.
    `fix_credit`: GradeWithHiddenGraders.fix_credit for both passes, None for the course's own setting.
    Raises GraderError when the course cannot be graded, autograde fails, or the gradebook disagrees."""
    course = Course.open(course_dir.resolve(), assignment, db_url)
    cache = report_cache or course.autograded / REPORT_CACHE_FOLDER
    course.keep_verdicts_in(cache)
    if fix_credit is not None:
        course.credit_fixes(fix_credit)
    course.converter.force = force
    log_path = course.autograded / f".attention-kit-autograde-{assignment}.log"
    progress = sys.stderr.isatty()

    started = time.perf_counter()
    reports, others = grade_course(course, jobs, shard, progress)
    if not reports:
        raise CourseError(f"no submitted notebooks of {assignment!r} under {course.coursedir.root}"
                          + (f" in shard {shard[0]}/{shard[1]}" if shard else ""))
    graded_at = time.perf_counter()
    print(f"grade-all: {len(reports)} notebooks graded in {graded_at - started:.1f} s (--jobs {jobs}); "
          f"now `nbgrader autograde {assignment}` writes the gradebook (log: {log_path})", file=sys.stderr)

    to_autograde = {r["student"] for r in reports if course.would_autograde(r["student"])}
    cached_before = set(os.listdir(cache)) if cache.is_dir() else set()
    command, env = autograde_invocation(assignment, course.overrides, course.db_url, others, force)
    status = run_autograde(command, env, log_path, len(to_autograde), progress)
    misses = len(set(os.listdir(cache)) - cached_before) if cache.is_dir() else 0
    print(f"grade-all: nbgrader autograde took {time.perf_counter() - graded_at:.1f} s"
          + (f"; it graded {misses} notebook(s) itself (not found in the cache)" if misses else ""), file=sys.stderr)

    scores = course.scores([r["student"] for r in reports])
    for report in reports:
        entry = scores.get(report["student"])
        report["gradebook_score"], report["gradebook_max_score"] = entry if entry else (None, None)
    add_collect_conflicts(reports, Path(course.coursedir.root), assignment)
    differing = [r["student"] for r in reports if not agrees(r, scores.get(r["student"]))]
    if json_out:
        write_reports(reports, json_out, lang)
    print(table(reports, scores, frozenset(differing)))
    print()
    print(class_summary(reports, lang))
    if status != 0:
        raise NbgraderFailed(f"nbgrader autograde failed (exit status {status}); its log: {log_path}", status)
    if differing:
        stale = [s for s in differing if s not in to_autograde]
        raise GradebookDisagrees(f"the gradebook differs from grade-all for {', '.join(differing)}"
                                 + (f"; nbgrader kept its earlier grading of {', '.join(stale)} (add --force to "
                                    "grade again)" if stale else ""))
