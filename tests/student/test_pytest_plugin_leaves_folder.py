"""Does `pytest -p grader.pytest_plugin --submission PATH` leave the submission's folder as it found it, and
name its items after the submission's file and the check, not after the folder?"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from support.paths import ROOT, STUBS

pytestmark = pytest.mark.sandbox


@pytest.mark.parametrize("where", ["the folder above", "elsewhere", "the repository, by its absolute path"])
def test_the_plugin_writes_nothing_beside_the_submission(where, tmp_path, graded):
    """pytest takes its rootdir (where .pytest_cache goes) from the submission's path: the common folder of it and
    the working folder, or the submission's own folder where its path is absolute."""
    graded(STUBS)  # the session's report cache (its folder in the environment) answers the command: same text
    folder = tmp_path / "student-notebooks"
    folder.mkdir()
    submission = shutil.copy(STUBS, folder / "nomask.py")
    cwd = {"the folder above": tmp_path, "elsewhere": tmp_path / "elsewhere"}.get(where, ROOT)
    cwd.mkdir(exist_ok=True)
    argument = str(submission) if cwd == ROOT else os.path.relpath(submission, cwd)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "grader.pytest_plugin", "--grader-lang", "en",
                           "--submission", argument, "-rf", "-m", "part1"],
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout's grader, from anywhere
                          capture_output=True, text=True, timeout=600)
    assert sorted(p.name for p in folder.iterdir()) == ["nomask.py"], done.stdout[-2000:]
    assert not list(tmp_path.rglob(".pytest_cache")), done.stdout[-2000:]
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    shown = os.path.relpath(submission, cwd)  # as pytest shows a test file's path
    assert failed and all(line.startswith(f"FAILED {shown}::sdpa.") for line in failed), done.stdout[-2000:]
