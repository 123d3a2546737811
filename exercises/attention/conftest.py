"""Self-check for the exercise: the public checks of the hidden grader, run on your attention.py.

`pytest exercises` grades exercises/attention/attention.py; set ATTENTION_IMPL=path/to/file.py
(or a notebook) to check another file. The same check code as the hidden grader, public subset.
"""
import os
from pathlib import Path

import pytest

from grader.checks import checks_for
from grader.grade import grade_submission

DEFAULT_IMPL = Path(__file__).with_name("attention.py")


@pytest.fixture(scope="session")
def public_report() -> dict:
    path = os.environ.get("ATTENTION_IMPL", str(DEFAULT_IMPL))
    return grade_submission(path, checks=checks_for(visibility="public"))


def public_check_ids(part: str) -> list[str]:
    return [c.id for c in checks_for(part, visibility="public")]
