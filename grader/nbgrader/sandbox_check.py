"""Autograde's pre-convert hook: refuse, in one line and before the first student, where the sandbox cannot start.

nbgrader runs the hook for each submission before it records anything in the gradebook. Where the sandbox
cannot start (grader.sandbox.availability), grading every student would end in an error for each, and a
student without grades reads as 0 in nbgrader's export; the hook ends the whole `nbgrader autograde` instead,
so the gradebook and the submissions stay as they were.
"""
from __future__ import annotations

import sys

from grader.sandbox import availability

EXIT_STATUS = 2  # as the grader's own CLI exits when the sandbox cannot start (docs/instructors/grading.md)


def refuse_without_sandbox(**_submission) -> None:
    """nbgrader calls it with assignment=, student= and notebooks=; none of them matters here."""
    reason = availability.problem()
    if reason:
        print(f"attention-kit: {availability.refusal(reason)}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_STATUS)  # an Exception would be logged and the next student tried
