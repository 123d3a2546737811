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
  beside one receipt `<assignment>_<username>_attempt_<time>.txt` per attempt.
- The kit's own: `<student_id>_<any name>` (grader.nbgrader.collector).

`hand_in(layout, path)` reads one file's relative path; `detect(paths)` picks the layout most names follow.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from grader.student_id import STUDENT_ID

LAYOUTS = ("canvas", "moodle", "blackboard", "student_id")

_CANVAS = re.compile(r"^(?P<name>[^\W_]*)(?P<late>_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$")
_MOODLE_FOLDER = re.compile(r"^(?P<name>.+)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
_BLACKBOARD = re.compile(r"^(?P<assignment>.+)_(?P<user>[^\W_](?:[^\W_]|[.\-])*)_attempt_"  # a username as an id
                         r"(?P<time>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+)|\.txt)?$")
_BLACKBOARD_TIME = "%Y-%m-%d-%H-%M-%S"


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
    folder = _MOODLE_FOLDER.match(_nfc(path.parent.name)) if path.parent.name else None
    if folder and folder["file"] == "":
        found, file_name = folder, _nfc(path.name)
    else:
        found = _MOODLE_FOLDER.match(_nfc(path.name))
        file_name = found["file"] if found else ""
    if not found or not file_name:
        return ("not named as Moodle names its files (a folder <full name>_<participant id>_assignsubmission_file_, "
                "or <full name>_<participant id>_assignsubmission_file_<file>)")
    if found["plugin"] != "file":
        return f"Moodle's {found['plugin']!r} submission (assignsubmission_{found['plugin']}), not an uploaded file"
    return HandIn("moodle", found["participant"], file_name, name=found["name"].strip())


def blackboard(path: PurePosixPath) -> HandIn | str:
    match = _BLACKBOARD.match(_nfc(path.name))
    if not match:
        return "not named as Blackboard names its files (<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>)"
    if not match["file"]:
        return "Blackboard's receipt of the attempt (submission details), not a hand-in"
    try:
        time = datetime.strptime(match["time"], _BLACKBOARD_TIME)
    except ValueError:
        return f"an attempt time {match['time']!r} that is no date"
    return HandIn("blackboard", match["user"], match["file"], time=time)


def student_id(path: PurePosixPath) -> HandIn | str:
    match = STUDENT_ID.match(_nfc(path.name))
    if not match:
        return "no student id: the name must be <student_id>_<name>.ipynb, id of letters, digits, - and ."
    return HandIn("student_id", match["student_id"], match["name"])


READERS = {"canvas": canvas, "moodle": moodle, "blackboard": blackboard, "student_id": student_id}


def hand_in(layout: str, path: PurePosixPath) -> HandIn | str:
    """The hand-in a file is in `layout` (its path relative to the extracted folder), or why it is none."""
    return READERS[layout](path)


def detect(paths: list[PurePosixPath]) -> tuple[str, str]:
    """(layout, why): the layout most of the files follow. An LMS's names mostly also read as `<student_id>_…`
    (`wangxiaoming_1002_…`), so on a tie the LMS's layout wins, and the kit's own only where more files follow it."""
    counts = {layout: sum(isinstance(hand_in(layout, p), HandIn) for p in paths) for layout in LAYOUTS}
    best = max(LAYOUTS, key=lambda layout: counts[layout])  # the first of the equal counts: an LMS's
    if counts[best] == 0:
        return "student_id", "no file is named as Canvas, Moodle, Blackboard or the kit name their files"
    return best, f"{counts[best]} of {len(paths)} file(s) are named as {best} exports them"


def is_lms_export_archive(stem: str) -> bool:
    """Whether an archive's name is one only an LMS gives its bulk download, so that it is the class's archive
    even though it starts like a student's `<student_id>_….zip`: Blackboard's `gradebook_<course>_<assignment>_<time>`.
    (Canvas's `submissions.zip` has no id prefix anyway; Moodle's `<course>-<assignment>-<id>.zip` can look like
    a student's, so it counts as the class's only when the collector is told the layout is Moodle's.)"""
    return _nfc(stem).startswith("gradebook_")
