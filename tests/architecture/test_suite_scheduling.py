"""Does `make test`'s scheduling keep the files that share a costly session fixture on one xdist worker?"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.paths import ROOT, TESTS
from support.session import SHARED_FIXTURE_GROUPS

pytestmark = pytest.mark.unit


def test_every_file_using_the_shared_class_is_in_its_group():
    users = {path.relative_to(ROOT).as_posix() for path in TESTS.rglob("test_*.py")
             if path.name != Path(__file__).name and "shared_class(" in path.read_text(encoding="utf-8")}
    grouped = {path for path, group in SHARED_FIXTURE_GROUPS.items() if group == "nbgrader_course.shared_class"}
    assert users and users == grouped
