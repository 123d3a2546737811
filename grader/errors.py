"""The grader's own failures, as opposed to a student's: caught once, never scored as a mistake."""
from __future__ import annotations


class GraderError(Exception):
    """A bug or misuse in the grader itself (a malformed probe request, a bad option)."""

    exit_code = 2  # what the CLI exits with when one reaches it
