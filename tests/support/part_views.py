"""A part's checks read from one whole grading of a repository hand-in, as the student's report holds them.

The second lab's check files (tests/checks/test_kv_cache_*.py) each ask about one part, or some of its checks, and
grade-all's test grades the same mutants whole; grading each part on its own graded every file once more per part.
A hand-in of tests/submissions is graded once, whole, through the session's report cache (the key grade-all's command
line computes too), and a part's view is that report's entries of the part (and the integrity check every grading
has), summed as a report of their own (`summarised`, the rule a fix's regrade is spliced by): the verdict the student
gets, the other parts run in the same worker. A variant a test writes is graded with the part's checks alone: no
other test grades it, and the other parts would only add to its cost.
"""
from __future__ import annotations

import functools
from pathlib import Path

from grader.checks import checks_for
from grader.grade import grade_submission
from grader.report.json_report import summarised
from support.paths import SUBMISSIONS
from support.session import SESSION_REPORTS


@functools.cache
def whole(path: Path) -> dict:
    return grade_submission(path, cache=SESSION_REPORTS)


def report(path: Path, part: str, check_ids: tuple[str, ...] | None = None) -> dict:
    """The report of `part`'s checks (or only `check_ids` of them) and the integrity check."""
    if not path.resolve().is_relative_to(SUBMISSIONS.resolve()):
        checks = [c for c in checks_for(part) if check_ids is None or c.id in check_ids]
        return grade_submission(path, checks=checks, cache=SESSION_REPORTS)
    kept = [c for c in whole(path)["checks"]
            if c["part"] == "integrity" or c["part"] == part and (check_ids is None or c["id"] in check_ids)]
    return summarised(kept)
