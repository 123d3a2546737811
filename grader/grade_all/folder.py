"""Grading a folder of submissions: one row per student, whatever the submission does."""
from __future__ import annotations

from pathlib import Path

from grader.exercises import Exercise
from grader.handin.exercise_of import exercise_of
from grader.handin.clean_text import printable
from grader.grade import grade, grade_submission
from grader.grade_all.discovery import all_submissions, one_per_student, student_folder
from grader.grade_all.parallel import in_parallel
from grader.handin.source import Refusal, Submission

ENDED_TWICE = Refusal("submission-too-costly", "评分这份代码时，评分进程两次意外终止，所以没有再次评分",
                      "grading this code ended the grading process twice, so it was not graded again")


def failed_report(error: BaseException, stage: str, exercise: Exercise) -> dict:
    """The row of a submission the grader could not grade (unreadable file, grader bug): 0 points of `exercise`'s."""
    return {"score": 0.0, "max_score": exercise.max_score, "checks": [], "mistakes": [], "advice": [],
            "error": printable(f"{stage}: {type(error).__name__}: {error}", keep_newlines=False)}


def ended_twice(student: str, path: Path, exercise: Exercise | None = None) -> dict:
    """The row of a hand-in whose grading ended its job process twice (grader.grade_all.parallel): 0 points and
    why, every check of its exercise (`exercise`, else the one its name says) listed; nothing of it runs again."""
    refused = Submission(str(path), "", exercise or exercise_of(path, []), refusal=ENDED_TWICE)
    return {"submission": str(path), "student": student, **grade(refused)}


def grade_one(student: str, path: Path, folder: Path, cache: Path | None = None, fix_credit: float = 0.0,
              exercise: Exercise | None = None) -> dict:
    """`folder`: the student's own folder, which the submission may not leave through a link; `exercise`: what every
    hand-in of the class answers, where the verb was told (else each one's name and code say)."""
    try:
        report = grade_submission(path, folder=folder, cache=cache, fix_credit=fix_credit, exercise=exercise)
    except Exception as error:  # a grader bug: still a row
        report = failed_report(error, "grading failed", exercise or exercise_of(path, []))
    return {"submission": str(path), "student": student, **report}


def grade_class(root: Path, jobs: int = 1, progress: bool = False, cache: Path | None = None,
                fix_credit: float = 0.0, exercise: Exercise | None = None) -> list[dict]:
    """One language-neutral report per student under `root`, in the order of `find_submissions` (the other hand-ins
    claiming a graded student's id listed in its `conflicts`); `cache`: the report
    cache's folder (grader.report.cache), none by default; `fix_credit`: grader.fixes's fraction; `exercise`: as
    `grade_one`."""
    submissions, conflicts = one_per_student(all_submissions(root))
    reports = in_parallel(lambda item: grade_one(*item, student_folder(root, item[1]), cache, fix_credit, exercise),
                          submissions, len(submissions), jobs, progress, "submission",
                          killed=lambda item: ended_twice(*item, exercise))
    for report in reports:
        if report["student"] in conflicts:
            report["conflicts"] = [str(path) for path in conflicts[report["student"]]]
    return reports
