"""Grades in the CSV layouts the LMS gradebook imports accept, each into the assignment's own column.

- Canvas (Grades → Import): columns `Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, then one
  column per assignment, `<assignment> (<Canvas assignment id>)`; Canvas matches rows by `ID` (or the SIS ids)
  and columns by the id in brackets: a header it does not know becomes a new assignment. With a roster (Canvas's
  own gradebook export) the column is the roster's whose name, without its `(id)`, equals the assignment's
  ignoring case; with none, the import is refused with the roster's columns listed. Without a roster the student
  id is taken as the Canvas user id, as the collector made it, and the column is written as named.
- Moodle (Assignment → "Upload grading worksheet"): Moodle's own grading worksheet, matched on `Identifier`
  (`Participant <id>`), the score in its `Grade` column. Without a roster the student id is the participant id.
- Blackboard (Grade Centre → Work Offline → Upload): matched on `Username`, each grade column named
  `<column name> [Total Pts: …] |<column id>`; Blackboard updates the column whose id follows `|` and ignores
  the others. With a roster (the Grade Centre's download) the column is the roster's whose name (before ` [` and
  `|`) equals the assignment's ignoring case; without one the column must be named in full, id and all.
A student the roster cannot place is returned apart, never written under someone else's row. A cell beginning
with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (OWASP's advice against CSV injection), so a
spreadsheet shows it as text; the keys the LMS matches on (ids, usernames) and the scores are never such text.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from grader.lms.roster import Roster

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Feedback comments"]
BLACKBOARD_COLUMNS = ["Last Name", "First Name", "Username"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CANVAS_ID = re.compile(r"\s*\(\d+\)\s*$")
_BLACKBOARD_DECORATION = re.compile(r"\s*(?:\[[^\]]*\])?\s*(?:\|\s*\d+)?\s*$")


class NoSuchColumn(ValueError):
    """The roster has no column for the assignment; the message lists the columns it has."""


@dataclass(frozen=True)
class Grade:
    student_id: str  # the course's (nbgrader's) student id
    name: str  # "Last, First" as the gradebook has it
    score: float | None  # None: nothing handed in
    max_score: float


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def neutralised(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula."""
    return f"'{cell}" if cell.startswith(_FORMULA_START) else cell


def _to_csv(fieldnames: list[str], rows: list[dict[str, str]], keep: set[str]) -> str:
    """`keep`: the columns written as they are (the score the kit computed)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, extrasaction="ignore")
    writer.writeheader()
    writer.writerows({name: value if name in keep else neutralised(value) for name, value in row.items()}
                     for row in rows)
    return out.getvalue()


def roster_row(roster: Roster | None, grade: Grade) -> dict[str, str] | None:
    return roster.by_student.get(grade.student_id) if roster else None


def roster_column(roster: Roster, assignment: str, bare_name) -> str:
    """The roster's column for `assignment`: its header without the LMS's decoration (`bare_name`), case-folded."""
    wanted = bare_name(assignment).casefold()
    found = [name for name in roster.fieldnames if bare_name(name).casefold() == wanted]
    if len(found) != 1:
        raise NoSuchColumn(f"the roster has {'no' if not found else len(found)} column(s) for assignment {assignment!r}"
                           f"; its columns: {', '.join(repr(name) for name in roster.fieldnames)}. Name the column "
                           f"with --LmsGradesExporter.column=…")
    return found[0]


def _rows(grades: list[Grade], roster: Roster | None, column: str, without_roster) -> tuple[list[dict], list[str]]:
    rows, unplaced = [], []
    for grade in grades:
        base = roster_row(roster, grade)
        if roster and base is None:
            unplaced.append(grade.student_id)
            continue
        row = dict(base) if base else without_roster(grade)
        row[column] = _score(grade.score)
        rows.append(row)
    return rows, unplaced


def canvas_csv(grades: list[Grade], column: str, roster: Roster | None = None) -> tuple[str, list[str]]:
    """(the CSV Canvas imports, the students it could not place). `column`: the assignment's name (matched in the
    roster) or its column header, e.g. `Attention (2291)`."""
    if roster:
        column = column if column in roster.fieldnames else roster_column(roster, column, lambda name: _CANVAS_ID.sub("", name))
    fieldnames = [*(roster.fieldnames if roster else CANVAS_COLUMNS)]
    fieldnames += [column] if column not in fieldnames else []
    rows, unplaced = _rows(grades, roster, column, lambda grade: {"Student": grade.name, "ID": grade.student_id})
    return _to_csv(fieldnames, rows, {column}), unplaced


def moodle_csv(grades: list[Grade], roster: Roster | None = None) -> tuple[str, list[str]]:
    """(Moodle's grading worksheet with the grades, the students it could not place)."""
    fieldnames = roster.fieldnames if roster else MOODLE_COLUMNS
    grade_column = next((name for name in fieldnames if name.strip().lower() == "grade"), "Grade")
    rows, unplaced = _rows(grades, roster, grade_column, lambda grade: {
        "Identifier": f"Participant {grade.student_id}", "Full name": grade.name,
        "Maximum Grade": _score(grade.max_score)})
    return _to_csv(fieldnames if grade_column in fieldnames else [*fieldnames, grade_column], rows,
                   {grade_column}), unplaced


def blackboard_csv(grades: list[Grade], column: str, roster: Roster | None = None) -> tuple[str, list[str]]:
    """(the CSV Blackboard's Grade Centre upload takes, the students it could not place). `column`: the assignment's
    name (matched in the roster's headers) or the full header `<name> [Total Pts: 20 Score] |<column id>`."""
    if roster:
        column = column if column in roster.fieldnames else roster_column(
            roster, column, lambda name: _BLACKBOARD_DECORATION.sub("", name))
    elif "|" not in column:
        raise NoSuchColumn(f"Blackboard updates a column by the id after '|' in its header; {column!r} has none: give "
                           f"the Grade Centre's download as the roster, or the full header as --LmsGradesExporter.column")
    identity = [name for name in (roster.fieldnames if roster else BLACKBOARD_COLUMNS)
                if name in BLACKBOARD_COLUMNS or name.strip().lower() in ("student id", "username")]

    def without_roster(grade: Grade) -> dict[str, str]:
        last, _, first = grade.name.partition(", ")
        return {"Last Name": last, "First Name": first, "Username": grade.student_id}
    rows, unplaced = _rows(grades, roster, column, without_roster)
    return _to_csv([*identity, column], rows, {column}), unplaced
