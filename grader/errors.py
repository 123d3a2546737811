"""The grader's own failures: it cannot run (a missing file, wrong options, a course nbgrader cannot
grade, ...). Raised where the problem is found, caught once by the CLI (grader.cli), which prints
`grader: MESSAGE` on stderr and exits with the error's code. A student's mistake is never one of
these: it is a report, and a report means exit status 0 (docs/instructors/grading.md, Exit status)."""
from __future__ import annotations


class GraderError(Exception):
    """The grader could not do what it was asked; the message says why in plain words."""

    exit_code = 2


class UsageError(GraderError):
    """Options that do not go together, or an input path that does not exist."""

    exit_code = 2


class NoGraders(GraderError):
    """An exercise declared before all its parts have hidden graders (a lab being written): nothing of it is graded,
    rather than a score made of the parts that happen to have checks."""

    exit_code = 2


class CourseError(GraderError):
    """The nbgrader course cannot be graded this way (no such assignment in the gradebook, no grading
    step in its configuration, no submitted notebooks)."""

    exit_code = 3


class GradebookDisagrees(GraderError):
    """grade-all --nbgrader printed its reports, but the gradebook holds other scores for some students."""

    exit_code = 1


class NbgraderFailed(GraderError):
    """An nbgrader command the grader runs (`autograde`, `generate_assignment`) failed. Its own exit status
    (usually 1) is in the message, not passed on: 1 already means "the gradebook disagrees"."""

    exit_code = 4

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
