"""A course roster: who each LMS person is in the course's own student ids, and back.

The roster is a CSV the instructor already has: Moodle's grading worksheet (Assignment → "Download
grading worksheet", columns `Identifier` = `Participant 1001`, `Full name`, ...) or Canvas's gradebook
export (`Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, ...), or any CSV with such columns.
The course's student id is, row by row, the first of these columns with a value: `student_id`, `Student ID`
(Blackboard's Grade Centre), `ID number`
(Moodle's identity field), `SIS User ID`, `SIS Login ID`, `Email address` (in every Moodle worksheet), else the
LMS's own key (a Canvas student enrolled by hand has no SIS id). A hand-in is matched by the LMS's own key first
(Moodle participant id, Canvas user id, a `username`), then by name (letters and digits only,
case-folded: `Wang, Xiaoming` and Canvas's `wangxiaoming` are one name); a name two rows share matches none.
The rows are kept as read, so a grade sheet can be written back in the same columns (grader.lms.grade_sheets), and so
is Canvas's `Points Possible` row (no student's: it holds each column's maximum), unstripped.
"""
from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from grader.lms.names import HandIn

STUDENT_ID_COLUMNS = ("student_id", "student id", "id number", "sis user id", "sis login id", "email address")
KEY_COLUMNS = ("participant_id", "identifier", "id", "username")
NAME_COLUMNS = ("full name", "student", "name")
_PARTICIPANT = re.compile(r"^\D*(\d+)$")  # Moodle's `Participant 1001` (the word is translated)


def name_key(name: str) -> str:
    """A name as both a roster and an LMS file name spell it: letters and digits only, case-folded."""
    return "".join(ch for ch in unicodedata.normalize("NFC", name).casefold() if ch.isalnum())


def _column(fieldnames: list[str], choices: tuple[str, ...]) -> str | None:
    by_lower = {name.strip().lower(): name for name in fieldnames}
    return next((by_lower[choice] for choice in choices if choice in by_lower), None)


@dataclass
class Roster:
    fieldnames: list[str]
    rows: list[dict[str, str]]
    student_column: str
    key_column: str | None
    name_column: str | None
    by_key: dict[str, dict[str, str]] = field(default_factory=dict)
    by_name: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    student_columns: list[str] = field(default_factory=list)  # the id columns present, in STUDENT_ID_COLUMNS order
    by_student: dict[str, dict[str, str]] = field(default_factory=dict)
    points_possible: dict[str, str] | None = None  # Canvas's row of each column's maximum, as Canvas wrote it

    @classmethod
    def read(cls, path: Path) -> "Roster":
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            fieldnames = list(reader.fieldnames or [])
            raw = [{k: v or "" for k, v in row.items() if k is not None} for row in reader]
        rows = [{k: v.strip() for k, v in row.items()} for row in raw]
        student_columns = [column for choice in STUDENT_ID_COLUMNS if (column := _column(fieldnames, (choice,)))]
        student_column = student_columns[0] if student_columns else _column(fieldnames, KEY_COLUMNS)
        if student_column is None:
            raise ValueError(f"the roster {path} has no student id column (one of: {', '.join(STUDENT_ID_COLUMNS)}) "
                             f"and no LMS key column (one of: {', '.join(KEY_COLUMNS)})")
        roster = cls(fieldnames, [], student_column, _column(fieldnames, KEY_COLUMNS), _column(fieldnames, NAME_COLUMNS),
                     student_columns=student_columns)
        for row, as_written in zip(rows, raw):
            if roster.student_of(row):  # Canvas's "Points Possible" row and empty lines have none
                roster.add(row)
            elif roster.name_column and row.get(roster.name_column, "").casefold() == "points possible":
                roster.points_possible = as_written
        return roster

    def student_of(self, row: dict[str, str]) -> str:
        """The row's student id: its first id column with a value, else the LMS's own key (a student enrolled by
        hand has a Canvas ID but no SIS User ID; only a row with neither, like "Points Possible", is no one)."""
        return next((row[column] for column in self.student_columns if row.get(column)), "") or self.key_of(row)

    def key_of(self, row: dict[str, str]) -> str:
        if self.key_column is None:
            return ""
        key = row.get(self.key_column, "")
        match = _PARTICIPANT.match(key) if self.key_column.strip().lower() == "identifier" else None
        return match.group(1) if match else key  # only Moodle's Identifier wraps its id: `user07` is a username

    def add(self, row: dict[str, str]) -> None:
        self.rows.append(row)
        self.by_student[self.student_of(row)] = row
        if self.key_of(row):
            self.by_key[self.key_of(row)] = row
        if self.name_column and name_key(row.get(self.name_column, "")):
            self.by_name.setdefault(name_key(row[self.name_column]), []).append(row)

    def names_of(self, student: str) -> tuple[str, str]:
        """(last name, first name) of a course's student as the roster writes them: its own `Last Name`/`First Name`
        columns (Blackboard's), else its name column split at the comma of a sortable `Last, First` (Canvas's), else
        the whole name as the last name (Moodle's `Full name`, whose order the site chooses); ("", "") for no row."""
        row = self.by_student.get(student)
        if row is None:
            return "", ""
        last, first = _column(self.fieldnames, ("last name",)), _column(self.fieldnames, ("first name",))
        if last or first:
            return row.get(last, "") if last else "", row.get(first, "") if first else ""
        name = row.get(self.name_column, "") if self.name_column else ""
        surname, comma, given = name.partition(",")
        return (surname.strip(), given.strip()) if comma else (name, "")

    def student_for(self, hand_in: HandIn) -> tuple[str | None, str]:
        """(the course's student id, "") for a hand-in, or (None, why it matches no one)."""
        if hand_in.who in self.by_key:
            return self.student_of(self.by_key[hand_in.who]), ""
        rows = self.by_name.get(name_key(hand_in.name), []) if name_key(hand_in.name) else []
        if len(rows) == 1:
            return self.student_of(rows[0]), ""
        if len(rows) > 1:
            return None, f"the roster has {len(rows)} people named {hand_in.name!r} and none with id {hand_in.who}"
        return None, f"not in the roster: no row with id {hand_in.who}" + (f" or name {hand_in.name!r}" if hand_in.name else "")
