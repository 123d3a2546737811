"""Bulk downloads built as Canvas, Moodle and Blackboard name them, for the tests.

Each builder writes the zip an instructor downloads and returns what a correct collection must give:
student id -> (the file that must be collected, late or not, the hand-in time or None).

The vendors' naming, as their documentation and downloads show it (facts the builders follow, not the kit's code):
- Canvas, Assignment → Download Submissions: `submissions.zip`, one flat folder. Each file is
  `<student's sortable name, letters and digits only, lower case>[_LATE]_<Canvas user id>_<attachment id>_<file name
  as uploaded>`; `_LATE` marks a hand-in after the due date; attachment ids are Canvas's, growing with each upload.
  The student chooses only the part after the attachment id. The gradebook export (Grades → Export) has columns
  `Student, ID, SIS User ID, SIS Login ID, Section`, then `<assignment> (<assignment id>)` per assignment, and a
  `Points Possible` row; a student enrolled by hand has an empty SIS User ID.
- Moodle, Assignment → View all submissions → Download all submissions: `<course>-<assignment>-<cmid>.zip`. With
  "Download submissions in folders" each participant has one top-level folder
  `<full name>_<participant id>_assignsubmission_file_/` holding the files (and any folders) as uploaded; without
  it, the files are flat, `<full name>_<participant id>_assignsubmission_file_<file name>`. Other submission
  plugins write `assignsubmission_onlinetext_`. The zip's entry times are the site's wall-clock time, no zone.
  The grading worksheet has `Identifier` (`Participant <id>`), `Full name`, `Email address`, `ID number`, `Grade`, ….
- Blackboard, Grade Centre → column → Assignment File Download: `gradebook_<course id>_<assignment>_<time>.zip`;
  for every attempt a receipt `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>.txt` whose first line is
  `Name: <first> <last> (<username>)`, then `Assignment:`, `Date Submitted:` and the attempt's files, and each
  uploaded file as `<assignment>_<username>_attempt_<same time>_<file name as uploaded>`. Usernames may hold
  `_`, `.` and digits; the student chooses only the part after the attempt time.
"""
from __future__ import annotations

import csv
import json
import os
import re
import zipfile
from datetime import datetime
from pathlib import Path

NOTEBOOK = json.dumps({"nbformat": 4, "nbformat_minor": 0, "metadata": {}, "cells": []})


def write_zip(zip_path: Path, entries: dict[str, tuple[str, datetime]]) -> Path:
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, (text, when) in entries.items():
            info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return zip_path


NOV30 = datetime(2026, 11, 30, 12, 0, 0)
DEC1 = datetime(2026, 12, 1, 9, 30, 0)


def canvas_zip(folder: Path) -> tuple[Path, dict[str, str], set[str], dict[str, str]]:
    """Canvas's submissions.zip: (zip, Canvas user id -> file collected, the LATE ids, file left out -> reason word)."""
    entries = {
        "wangxiaoming_1001_5001_attention.ipynb": (NOTEBOOK, NOV30),       # "Wang, Xiaoming"
        "李雷_LATE_1002_5002_Copy of attention.ipynb": (NOTEBOOK, DEC1),  # "李 雷", handed in late
        "obrienmaryann_1003_5003_attention (1).ipynb": (NOTEBOOK, NOV30),  # "O'Brien, Mary Ann"
        "chenjing_1004_5004_attention.ipynb": (NOTEBOOK, DEC1),            # two uploads: the later attachment wins,
        "chenjing_1004_5010_attention-1.ipynb": (NOTEBOOK, NOV30),         # whatever the file times say
        "_LATE_1005_5005_attention.ipynb 的副本": (NOTEBOOK, DEC1),         # a name Canvas reduced to nothing
        "wangxiaoming_1001_5006_notes.txt": ("my notes", NOV30),
    }
    collected = {"1001": "wangxiaoming_1001_5001_attention.ipynb", "1002": "李雷_LATE_1002_5002_Copy of attention.ipynb",
                 "1003": "obrienmaryann_1003_5003_attention (1).ipynb", "1004": "chenjing_1004_5010_attention-1.ipynb",
                 "1005": "_LATE_1005_5005_attention.ipynb 的副本"}
    left_out = {"chenjing_1004_5004_attention.ipynb": "newer", "wangxiaoming_1001_5006_notes.txt": "not a notebook"}
    return write_zip(folder / "submissions.zip", entries), collected, {"1002", "1005"}, left_out


CANVAS_NAME = re.compile(r"^(?P<name>[^\W_]*)(?:_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$")
"""Canvas's download naming (above), as Canvas reads a re-uploaded file back to its student."""

CANVAS_EXPORT_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
"""The columns before the assignments' in Canvas's gradebook export."""

MOODLE_WORKSHEET = [
    ["Identifier", "Full name", "Email address", "ID number", "Status", "Grade", "Maximum Grade",
     "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"],
    ["Participant 1001", "王 小明", "wxm@example.edu", "2026001", "Submitted for grading", "", "20.00", "Yes", "", "-", ""],
    ["Participant 1002", "Mary Ann O'Brien", "mao@example.edu", "2026002", "Submitted for grading", "", "20.00", "Yes", "", "-", ""],
    ["Participant 1003", "李雷", "ll@example.edu", "2026003", "Submitted for grading", "", "20.00", "Yes", "", "-", ""],
    ["Participant 1004", "Chen Jing", "cj@example.edu", "2026004", "Submitted for grading", "", "20.00", "Yes", "", "-", ""],
]


def moodle_zip(folder: Path, in_folders: bool = True) -> tuple[Path, dict[str, str], dict[str, str]]:
    """Moodle's "Download all submissions": (zip, course student id -> file collected, file left out -> reason word)."""
    def place(person: str, participant: str, file: str) -> str:
        prefix = f"{person}_{participant}_assignsubmission_file_"
        return f"{prefix}/{file}" if in_folders else f"{prefix}{file}"

    entries = {
        place("王 小明", "1001", "attention.ipynb"): (NOTEBOOK, NOV30),
        place("Mary Ann O'Brien", "1002", "Copy of attention.ipynb"): (NOTEBOOK, NOV30),
        place("Chen Jing", "1004", "attention.ipynb"): (NOTEBOOK, NOV30),        # two files: the later one wins
        place("Chen Jing", "1004", "attention (1).ipynb"): (NOTEBOOK, DEC1),
        place("Zhang San", "1099", "attention.ipynb"): (NOTEBOOK, NOV30),        # not in the roster
        (f"李雷_1003_assignsubmission_onlinetext_/onlinetext.html" if in_folders
         else "李雷_1003_assignsubmission_onlinetext_onlinetext.html"): ("<p>see attached</p>", NOV30),
    }
    collected = {"2026001": place("王 小明", "1001", "attention.ipynb"),
                 "2026002": place("Mary Ann O'Brien", "1002", "Copy of attention.ipynb"),
                 "2026004": place("Chen Jing", "1004", "attention (1).ipynb")}
    left_out = {place("Chen Jing", "1004", "attention.ipynb"): "newer",
                place("Zhang San", "1099", "attention.ipynb"): "not in the roster",
                (f"李雷_1003_assignsubmission_onlinetext_/onlinetext.html" if in_folders
                 else "李雷_1003_assignsubmission_onlinetext_onlinetext.html"): "onlinetext"}
    return write_zip(folder / "CS101 注意力-Attention-88.zip", entries), collected, left_out


def blackboard_zip(folder: Path) -> tuple[Path, dict[str, tuple[str, str]], dict[str, str]]:
    """Blackboard's gradebook download: (zip, username -> (file collected, attempt time), file left out -> reason word)."""
    hw = "注意力 Attention HW"
    entries = {
        f"{hw}_s001_attempt_2026-11-30-23-59-00_attention.ipynb": (NOTEBOOK, NOV30),
        f"{hw}_s001_attempt_2026-11-30-23-59-00.txt": ("Name: 王小明\nDate Submitted: ...", NOV30),
        f"{hw}_s002_attempt_2026-11-29-10-00-00_attention.ipynb": (NOTEBOOK, DEC1),
        f"{hw}_s002_attempt_2026-12-01-09-00-00_Copy of attention.ipynb": (NOTEBOOK, NOV30),
        f"{hw}_s003_attempt_2026-12-02-08-15-30_attention (1).ipynb": (NOTEBOOK, DEC1),
    }
    collected = {"s001": (f"{hw}_s001_attempt_2026-11-30-23-59-00_attention.ipynb", "2026-11-30 23:59:00"),
                 "s002": (f"{hw}_s002_attempt_2026-12-01-09-00-00_Copy of attention.ipynb", "2026-12-01 09:00:00"),
                 "s003": (f"{hw}_s003_attempt_2026-12-02-08-15-30_attention (1).ipynb", "2026-12-02 08:15:30")}
    left_out = {f"{hw}_s002_attempt_2026-11-29-10-00-00_attention.ipynb": "newer",
                f"{hw}_s001_attempt_2026-11-30-23-59-00.txt": "receipt"}
    return write_zip(folder / "gradebook_CS101-2026_Attention20HW_2026-12-03-10-00-00.zip", entries), collected, left_out


def unpack(zip_path: Path, into: Path) -> Path:
    """Unpack as the kit's extractor (and unzip) do: each archive in its own folder, entry times as local times."""
    folder = into / zip_path.stem
    with zipfile.ZipFile(zip_path) as archive:
        for info in archive.infolist():
            target = folder / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(info))
            stamp = datetime(*info.date_time).timestamp()
            os.utime(target, (stamp, stamp))
    return folder


def notebook_of(who: str) -> str:
    """A notebook that says whose it is, so that a test can tell which student's file landed where."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 0, "metadata": {"author": who}, "cells": []})


def blackboard_receipt(assignment: str, full_name: str, username: str, files: list[str]) -> str:
    listed = "".join(f"\tOriginal filename: {name}\n\tFilename: {assignment}_{username}_attempt_…_{name}\n" for name in files)
    return (f"Name: {full_name} ({username})\nAssignment: {assignment}\nDate Submitted: Monday, 30 November 2026\n"
            f"Current Grade: Needs Grading\n\nFiles:\n{listed}")


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path
