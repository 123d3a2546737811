"""Whose a file in Blackboard's gradebook download is, and which attempt it belongs to.

Blackboard names every file `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name as uploaded>`
and writes one receipt per attempt, `<assignment>_<username>_attempt_<time>.txt`, whose text starts
`Name: <full name> (<username>)`. Usernames may hold `_` (`li_na`), and the student chooses the uploaded
file's name, so a name alone cannot be split: `HW_li_na_attempt_…` may be assignment `HW`, user `li_na`
or assignment `HW_li`, user `na`, and an uploaded `bob_attempt_2099-01-01-00-00-00_x.ipynb` adds a second
`_attempt_` that a greedy split would take for the attempt.

So the assignment name is found first, per folder: from each receipt whose name ends in the username its
own `Name:` line gives (`<assignment>` is what precedes it; of several, the shortest). A receipt's name, all
Blackboard's, holds one attempt time, where a student's `.txt` named like one holds two (their attempt's, then
their own), so none can pose as a receipt. Without receipts, the assignment is the one prefix every file of the
folder can be read with; when several can, nothing is guessed and every file is refused. With the assignment known, the
username is what lies between it and the *first* `_attempt_<time>`, everything after is the student's
file name, and an attempt must have its receipt (when the folder has receipts) for its time to count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Callable

_TIME = r"\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}"
_AFTER_ASSIGNMENT = re.compile(rf"^(?P<user>.+?)_attempt_(?P<time>{_TIME})(?:_(?P<file>.+)|(?P<receipt>\.txt))$", re.S)
_ATTEMPT_TIME = re.compile(rf"_attempt_{_TIME}")
_RECEIPT_NAME = re.compile(rf"^(?P<attempt>.+)_attempt_(?P<time>{_TIME})\.txt$", re.S)
_NAME_LINE = re.compile(r"^\s*Name:\s*(?P<name>.*?)\s*\((?P<user>[^()\s]+)\)\s*$", re.M)
USERNAME = re.compile(r"^[^\W_][\w.\-]*$")
"""A Blackboard username as a folder name: letters, digits, `_`, `.`, `-`, starting with a letter or digit."""
TIME_FORMAT = "%Y-%m-%d-%H-%M-%S"
RECEIPT_BYTES = 64 << 10
"""Most of a receipt read: Blackboard's lists a name, the assignment, a date and the attempt's files."""
NAMING = "<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>"


@dataclass(frozen=True)
class Attempt:
    user: str
    time: datetime
    file_name: str  # empty for the receipt itself
    full_name: str = ""


def receipt_owner(file_name: str, text: str) -> tuple[str, str, str] | None:
    """(assignment, username, full name) a receipt's own name and text agree on, or None when they do not."""
    name_match = _RECEIPT_NAME.match(file_name)
    line = _NAME_LINE.search(text)
    if not name_match or not line:
        return None
    tail = f"_{line['user']}"
    if not name_match["attempt"].endswith(tail) or len(name_match["attempt"]) == len(tail):
        return None
    return name_match["attempt"][: -len(tail)], line["user"], line["name"]


def split(file_name: str, assignment: str) -> tuple[str, str, str, bool] | None:
    """(username, time text, uploaded file name, is a receipt) of a name read with `assignment`, else None."""
    if not file_name.startswith(f"{assignment}_"):
        return None
    found = _AFTER_ASSIGNMENT.match(file_name[len(assignment) + 1:])
    if not found or not USERNAME.match(found["user"]):
        return None
    return found["user"], found["time"], found["file"] or "", bool(found["receipt"])


def assignments_fitting(file_name: str) -> set[str]:
    """Every assignment name `file_name` can be read with."""
    return {file_name[:cut] for cut, char in enumerate(file_name) if char == "_" and cut
            and split(file_name, file_name[:cut])}


@dataclass
class Folder:
    """One folder of a Blackboard download: its assignment name (or why none can be told) and its receipts."""
    assignment: str = ""
    why_unknown: str = ""
    receipts: dict[tuple[str, str], str] = field(default_factory=dict)  # (username, time) -> full name

    @classmethod
    def read(cls, names: list[str], read_receipt: Callable[[str], str]) -> "Folder":
        receipts = [name for name in names if is_receipt_name(name)]
        owners = [owner for name in receipts if (owner := receipt_owner(name, read_receipt(name)))]
        if owners:
            assignment = min((owner[0] for owner in owners), key=len)
            folder = cls(assignment)
            for name in receipts:
                parts = split(name, assignment)
                if parts and parts[3]:
                    owner = receipt_owner(name, read_receipt(name))
                    if owner and owner[:2] == (assignment, parts[0]):
                        folder.receipts[(parts[0], parts[1])] = owner[2]
            return folder
        fitting = [found for name in names if (found := assignments_fitting(name))]
        common = set.intersection(*fitting) if fitting else set()
        if len(common) == 1:
            return cls(common.pop())
        return cls(why_unknown=(f"the folder has no Blackboard receipt (.txt) to tell where the assignment name ends "
                                f"and the username begins, and its names can be read {len(common)} ways "
                                f"({', '.join(sorted(common)) or 'none common to all'}); keep the receipts "
                                f"Blackboard puts in its download" if common or fitting else "no Blackboard names"))

    def attempt(self, file_name: str) -> Attempt | str:
        """The attempt a file belongs to, or why it belongs to none."""
        if not self.assignment:
            return self.why_unknown
        parts = split(file_name, self.assignment)
        if parts is None:
            return f"not named as Blackboard names this assignment's files ({self.assignment}_<username>_attempt_<time>_<file>)"
        user, time_text, uploaded, is_receipt = parts
        if is_receipt:
            return "Blackboard's receipt of the attempt (submission details), not a hand-in"
        try:
            time = datetime.strptime(time_text, TIME_FORMAT)
        except ValueError:
            return f"an attempt time {time_text!r} that is no date"
        if self.receipts and (user, time_text) not in self.receipts:
            return (f"no Blackboard receipt for user {user!r}'s attempt at {time_text}: the name does not come from "
                    f"Blackboard as it is")
        return Attempt(user, time, uploaded, self.receipts.get((user, time_text), ""))


def is_receipt_name(file_name: str) -> bool:
    """Named as Blackboard names a receipt. Its name is all Blackboard's, so it holds one attempt time; a `.txt` a
    student uploaded sits inside the name of their own attempt, after its time, and so holds two."""
    return bool(_RECEIPT_NAME.match(file_name)) and len(_ATTEMPT_TIME.findall(file_name)) == 1


def looks_like(file_name: str) -> bool:
    """Whether a name has Blackboard's shape at all (for telling which LMS a folder came from)."""
    return bool(assignments_fitting(file_name))


def reader(paths: list[PurePosixPath], read_text: Callable[[PurePosixPath], str]) -> Callable[[PurePosixPath], Attempt | str]:
    """path -> its attempt, each folder read once over all of its files."""
    by_folder: dict[PurePosixPath, list[str]] = {}
    for path in paths:
        by_folder.setdefault(path.parent, []).append(path.name)
    folders = {parent: Folder.read(files, lambda name, parent=parent: read_text(parent / name))
               for parent, files in by_folder.items()}

    def attempt(path: PurePosixPath) -> Attempt | str:
        folder = folders.get(path.parent)
        return folder.attempt(path.name) if folder else "not seen when the folder was read"
    return attempt
