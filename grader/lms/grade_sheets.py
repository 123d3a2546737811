"""Grades in the CSV layouts the LMS gradebook imports accept.

- Canvas (Grades → Import): columns `Student`, `ID`, `SIS User ID`, `SIS Login ID`, `Section`, then one
  column per assignment named `<assignment> (<Canvas assignment id>)` when known. Canvas matches rows by
  `ID` (or the SIS ids). With a roster (Canvas's own gradebook export) each row is the roster's row with the
  score filled in; without one the student id is taken as the Canvas user id, as the collector made it.
- Moodle (Assignment → "Upload grading worksheet"): Moodle's own grading worksheet, matched on `Identifier`
  (`Participant <id>`), the score in `Grade`. With a roster (that worksheet) its rows come back with `Grade`
  filled in; without one the student id is taken as the participant id, as the collector made it.
A student the roster cannot place is returned apart, never written under someone else's row.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from grader.lms.roster import Roster

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Feedback comments"]


@dataclass(frozen=True)
class Grade:
    student_id: str  # the course's (nbgrader's) student id
    name: str  # "Last, First" as the gradebook has it
    score: float | None  # None: nothing handed in
    max_score: float


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _to_csv(fieldnames: list[str], rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def roster_row(roster: Roster | None, grade: Grade) -> dict[str, str] | None:
    return roster.by_student.get(grade.student_id) if roster else None


def canvas_csv(grades: list[Grade], column: str, roster: Roster | None = None) -> tuple[str, list[str]]:
    """(the CSV Canvas imports, the students it could not place). `column`: the assignment's column header,
    e.g. `attention (777)`, or the roster's column whose header starts with it."""
    if roster:
        column = next((name for name in roster.fieldnames if name.startswith(column)), column)
    fieldnames = [*(roster.fieldnames if roster else CANVAS_COLUMNS)]
    fieldnames += [column] if column not in fieldnames else []
    rows, unplaced = [], []
    for grade in grades:
        base = roster_row(roster, grade)
        if roster and base is None:
            unplaced.append(grade.student_id)
            continue
        row = dict(base) if base else {"Student": grade.name, "ID": grade.student_id}
        row[column] = _score(grade.score)
        rows.append(row)
    return _to_csv(fieldnames, rows), unplaced


def moodle_csv(grades: list[Grade], roster: Roster | None = None) -> tuple[str, list[str]]:
    """(Moodle's grading worksheet with the grades, the students it could not place)."""
    fieldnames = roster.fieldnames if roster else MOODLE_COLUMNS
    grade_column = next((name for name in fieldnames if name.strip().lower() == "grade"), "Grade")
    rows, unplaced = [], []
    for grade in grades:
        base = roster_row(roster, grade)
        if roster and base is None:
            unplaced.append(grade.student_id)
            continue
        row = dict(base) if base else {"Identifier": f"Participant {grade.student_id}", "Full name": grade.name,
                                       "Maximum Grade": _score(grade.max_score)}
        row[grade_column] = _score(grade.score)
        rows.append(row)
    return _to_csv(fieldnames if grade_column in fieldnames else [*fieldnames, grade_column], rows), unplaced
