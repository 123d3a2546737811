"""Who handed in a file, and when, as each LMS's bulk download names it.

- Canvas ("Download Submissions"): one flat folder, each file
  `<name>[_LATE]_<user id>_<attachment id>_<file name as uploaded>`; `<name>` is the student's sortable
  name with everything but letters and digits removed (`wangxiaoming`, `王小明`, or empty), `_LATE` marks a
  hand-in after the due date (the export gives no time), ids are Canvas's numbers (attachment ids grow
  with each upload).
- Moodle ("Download all submissions"): a folder per participant `<Full name>_<participant id>_assignsubmission_file_`
  holding the files as uploaded, or, without "download submissions in folders", flat files
  `<Full name>_<participant id>_assignsubmission_file_<file name>`. Online-text and comment plugins use
  other plugin names (`assignsubmission_onlinetext_`): not notebooks.
- Blackboard (and nbgrader's own documented example): `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name>`,
  beside one receipt `<assignment>_<username>_attempt_<time>.txt` per attempt (grader.lms.blackboard reads them).
- The kit's own: `<student_id>_<any name>` (grader.nbgrader.collector).

`reader(layout, paths)` reads each file's relative path; `detect(paths)` picks the layout most names follow;
`class_download(stem, paths)` tells Moodle's class download by its members, whatever its name starts with.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Callable

from grader.lms import blackboard
from grader.handin.student_id import STUDENT_ID

LAYOUTS = ("canvas", "moodle", "blackboard", "student_id")

_CANVAS = re.compile(r"^(?P<name>[^\W_]*)(?P<late>_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$")
_MOODLE = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$", re.S)
"""Lazy: Moodle writes `<full name>_<id>_assignsubmission_<plugin>_` first, so its first such run is Moodle's and any
later one is in the name the student gave the file."""


@dataclass(frozen=True)
class HandIn:
    """One file as the LMS named it. `who` is the LMS's own key for the student (Canvas user id, Moodle
    participant id, Blackboard username, or the course's student id), `name` the person's name where the
    LMS gives one; `time` the hand-in time the name carries (naive: the LMS's local time); `late` the LMS's
    own late mark; `order` what orders two files of one student when no time does (Canvas attachment ids)."""
    layout: str
    who: str
    file_name: str
    name: str = ""
    time: datetime | None = None
    late: bool = False
    order: int = 0


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def canvas(path: PurePosixPath) -> HandIn | str:
    match = _CANVAS.match(_nfc(path.name))
    if not match:
        return "not named as Canvas names its files (<name>[_LATE]_<user id>_<attachment id>_<file>)"
    return HandIn("canvas", match["user"], match["file"], name=match["name"], late=bool(match["late"]),
                  order=int(match["attachment"]))


def moodle(path: PurePosixPath) -> HandIn | str:
    """The participant is the topmost folder (or, flat, file) Moodle named; what lies below or after it is the student's."""
    parts = [_nfc(part) for part in path.parts]
    for depth, part in enumerate(parts):
        found = _MOODLE.match(part)
        if found:
            break
    else:
        return ("not named as Moodle names its files (a folder <full name>_<participant id>_assignsubmission_file_, "
                "or <full name>_<participant id>_assignsubmission_file_<file>)")
    file_name = found["file"] if depth == len(parts) - 1 else parts[-1]
    if found["plugin"] != "file":
        return f"Moodle's {found['plugin']!r} submission (assignsubmission_{found['plugin']}), not an uploaded file"
    if not file_name:
        return "a Moodle name without the uploaded file's name"
    return HandIn("moodle", found["participant"], file_name, name=found["name"].strip())


def blackboard_hand_in(attempt: blackboard.Attempt | str) -> HandIn | str:
    if isinstance(attempt, str):
        return attempt
    return HandIn("blackboard", attempt.user, attempt.file_name, name=attempt.full_name, time=attempt.time)


def student_id(path: PurePosixPath) -> HandIn | str:
    match = STUDENT_ID.match(_nfc(path.name))
    if not match:
        return "no student id: the name must be <student_id>_<name>.ipynb, id of letters, digits, - and ."
    return HandIn("student_id", match["student_id"], match["name"])


READERS = {"canvas": canvas, "moodle": moodle, "student_id": student_id}


def reader(layout: str, paths: list[PurePosixPath],
           read_text: Callable[[PurePosixPath], str] = lambda path: "") -> Callable[[PurePosixPath], HandIn | str]:
    """path -> the hand-in a file is in `layout`, or why it is none. `paths`: every file of the extracted folder
    (relative to it): a Blackboard name is read against its folder's receipts, whose text `read_text` gives."""
    if layout == "blackboard":
        attempt_of = blackboard.reader(paths, read_text)
        return lambda path: blackboard_hand_in(attempt_of(path))
    return READERS[layout]


def hand_in(layout: str, path: PurePosixPath) -> HandIn | str:
    """One file read on its own (a Blackboard name without its folder's receipts, so only when unambiguous)."""
    return reader(layout, [path])(path)


def detect(paths: list[PurePosixPath], read_text: Callable[[PurePosixPath], str] = lambda path: "") -> tuple[str, str]:
    """(layout, why): the layout most of the files follow. An LMS's names mostly also read as `<student_id>_…`
    (`wangxiaoming_1002_…`), so on a tie the LMS's layout wins, and the kit's own only where more files follow it.
    Blackboard's receipts count as Blackboard's names: they are its own, one per attempt."""
    readers = {layout: reader(layout, paths, read_text) for layout in LAYOUTS}
    counts = {layout: sum(isinstance(read(path), HandIn) for path in paths) for layout, read in readers.items()}
    counts["blackboard"] += sum(blackboard.is_receipt_name(p.name) and blackboard.looks_like(p.name) for p in paths)
    best = max(LAYOUTS, key=lambda layout: counts[layout])  # the first of the equal counts: an LMS's
    if counts[best] == 0:
        return "student_id", "no file is named as Canvas, Moodle, Blackboard or the kit name their files"
    return best, f"{counts[best]} of {len(paths)} file(s) are named as {best} exports them"


def submitter_key(path: PurePosixPath) -> str:
    """Whose a member of a class download is, by the part of its name an LMS writes ("" when no LMS's naming fits):
    enough to hold each student to their own share of the download before the layout is known."""
    for layout in ("moodle", "canvas"):
        found = READERS[layout](path)
        if isinstance(found, HandIn):
            return f"{layout} {found.who}"
    attempt = _nfc(path.name).split("_attempt_", 1)
    if len(attempt) == 2:
        return f"blackboard {attempt[0]}"
    found = student_id(path)
    return f"student {found.who}" if isinstance(found, HandIn) else ""


def routine(layout: str, path: PurePosixPath) -> bool:
    """Whether a file is one the LMS itself adds beside the hand-ins, left out as a matter of course: Blackboard's
    receipt of each attempt, Moodle's online text (and every other non-file submission plugin)."""
    if layout == "blackboard":
        return blackboard.is_receipt_name(_nfc(path.name))
    if layout == "moodle":
        found = next((match for part in path.parts if (match := _MOODLE.match(_nfc(part)))), None)
        return bool(found) and found["plugin"] != "file"
    return False


_MOODLE_ARCHIVE = re.compile(r"-\d+$")
"""Moodle names its download `<course short name>-<assignment name>-<course module id>.zip`."""


def class_download(stem: str, paths: list[PurePosixPath]) -> str:
    """"moodle" when an archive is Moodle's class download by its own structure, whatever its name starts with: named
    as Moodle names its download (ending in `-<course module id>`) and every file in it (system folders such as
    `__MACOSX` and hidden files aside) under a `<full name>_<participant id>_assignsubmission_<plugin>_` Moodle wrote.
    `LLM_2026-Attention-88.zip` is then the class's, not student `LLM`'s; "" otherwise. (Canvas's `submissions.zip`
    and Blackboard's `gradebook_…` are told by their names; a student's own `<id>_….zip` holding files named as
    another LMS's stays theirs, so its members still cannot name a classmate.)"""
    files = [path for path in paths if not path.name.startswith(".") and "__MACOSX" not in path.parts]
    moodle_named = all(any(_MOODLE.match(_nfc(part)) for part in path.parts) for path in files)
    return "moodle" if files and moodle_named and _MOODLE_ARCHIVE.search(_nfc(stem)) else ""


def is_lms_export_archive(stem: str) -> bool:
    """Whether an archive's name is one only an LMS gives its bulk download, so that it is the class's archive
    even though it starts like a student's `<student_id>_….zip`: Blackboard's `gradebook_<course>_<assignment>_<time>`.
    (Canvas's `submissions.zip` has no id prefix anyway; Moodle's `<course>-<assignment>-<id>.zip` can look like
    a student's, so it counts as the class's only when the collector is told the layout is Moodle's.)"""
    return _nfc(stem).startswith("gradebook_")
