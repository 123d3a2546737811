"""Does the docs' collect command for each LMS, run verbatim in a course folder, collect the class?

e2e tier: step 2 of each LMS path is read from docs/instructors/lms.md and run by a shell in a course of its own
(the repo's nbgrader_config.py beside it, as in the repo, and the kit importable), on a download built from the
vendor's naming (tests/support/lms_exports.py) with the roster file named as the docs name it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from support import lms_exports
from grader.process import ROOT, nbgrader_env

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:Object of type <SubmittedAssignment> not in session")]

ASSIGNMENT = "attention"


def readme_collect_command(lms: str) -> str:
    """The command of step 2 (`Collect:`) in the docs' path for `lms`."""
    text = (ROOT / "docs" / "instructors" / "lms.md").read_text(encoding="utf-8")
    section = text[text.index(f"**{lms}.**"):]
    found = re.search(r"^2\. Collect: `([^`]+)`", section, re.M)
    assert found, f"docs/instructors/lms.md has no `2. Collect:` step for {lms}"
    return found[1]


def a_course(root: Path) -> Path:
    (root / "release" / ASSIGNMENT).mkdir(parents=True)
    (root / "release" / ASSIGNMENT / "attention.ipynb").write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    shutil.copyfile(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment(ASSIGNMENT)
    return root


def canvas_class(root: Path, tmp: Path) -> set[str]:
    zip_path, *_ = lms_exports.canvas_zip(tmp)
    lms_exports.write_csv(root / "canvas_export.csv", [
        [*lms_exports.CANVAS_EXPORT_IDENTITY, "Attention (2291)"], ["    Points Possible", "", "", "", "", "20"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "A", ""], ["李, 雷", "1002", "2026002", "ll", "A", ""],
        ["O'Brien, Mary Ann", "1003", "2026003", "mao", "A", ""], ["Chen, Jing", "1004", "2026004", "cj", "A", ""],
        ["Guest, Gao", "1005", "", "", "A", ""]])  # enrolled by hand: no SIS id
    shutil.move(zip_path, root / "downloaded" / ASSIGNMENT / "archive" / zip_path.name)
    return {"2026001", "2026002", "2026003", "2026004", "1005"}


def moodle_class(root: Path, tmp: Path) -> set[str]:
    zip_path, expected, _ = lms_exports.moodle_zip(tmp)
    lms_exports.write_csv(root / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
    shutil.move(zip_path, root / "downloaded" / ASSIGNMENT / "archive" / zip_path.name)
    return set(expected)


def blackboard_class(root: Path, tmp: Path) -> set[str]:
    entries = {}
    for user, name in (("li_na", "Li Na"), ("wang_na", "Wang Na"), ("d.wei", "Wei D")):
        attempt = f"Attention_{user}_attempt_2026-11-30-10-00-00"
        entries[f"{attempt}_attention.ipynb"] = (lms_exports.notebook_of(user), lms_exports.NOV30)
        entries[f"{attempt}.txt"] = (lms_exports.blackboard_receipt("Attention", name, user, ["attention.ipynb"]),
                                     lms_exports.NOV30)
    lms_exports.write_csv(root / "grade_centre.csv", [
        ["Last Name", "First Name", "Username", "Student ID", "Attention [Total Pts: 20 Score] |4401"],
        ["Li", "Na", "li_na", "2026001", ""], ["Wang", "Na", "wang_na", "", ""], ["Wei", "D", "d.wei", "2026003", ""]])
    lms_exports.write_zip(root / "downloaded" / ASSIGNMENT / "archive" / "gradebook_LLM101_Attention_2026-12-01.zip",
                          entries)
    return {"2026001", "wang_na", "2026003"}


@pytest.mark.parametrize("lms, build", [("Canvas", canvas_class), ("Moodle", moodle_class),
                                        ("Blackboard", blackboard_class)])
def test_readme_collect_command_collects_the_class(tmp_path, lms, build):
    """Run the docs' `2. Collect:` command for the LMS as written: is every student of the download collected?"""
    root = a_course(tmp_path / "course")
    (root / "downloaded" / ASSIGNMENT / "archive").mkdir(parents=True)
    expected = build(root, tmp_path)
    env = nbgrader_env()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    assert Path(sys.executable).parent.joinpath("nbgrader").exists()
    done = subprocess.run(["bash", "-c", readme_collect_command(lms)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert {p.parent.name for p in (root / "submitted").glob(f"*/{ASSIGNMENT}")} == expected, done.stderr
