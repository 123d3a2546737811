"""Step: the student version of the assignment, produced by `nbgrader generate_assignment`.

nbgrader clears the solution regions (stubs from nbgrader_config.py), removes the hidden
tests, locks the provided and test cells, and adds the checksums autograding relies on.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from nbformat import NotebookNode

from grader.build.config import ROOT
from grader.build.read_write import read_notebook
from grader.errors import NbgraderFailed
from grader.process import nbgrader_env


def generate_assignment(assignment: str, *, record_db: bool) -> NotebookNode:
    """Run nbgrader from the course directory (the repo root) into a scratch release folder.

    With record_db the assignment's cells, hidden tests included, are saved into the course's
    gradebook.db, which `nbgrader autograde` needs; without it nothing outside the scratch
    folder is touched.
    """
    with tempfile.TemporaryDirectory(prefix="attention-kit-release-") as scratch:
        command = [
            sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force",
            f"--CourseDirectory.release_directory={scratch}", "--log-level=WARN",
        ]
        if not record_db:
            command.append("--no-db")
        done = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True)
        if done.returncode != 0:
            raise NbgraderFailed(f"nbgrader generate_assignment failed:\n{done.stdout}{done.stderr}", done.returncode)
        return read_notebook(Path(scratch) / assignment / f"{assignment}.ipynb")
