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
Each sheet is written on the LMS column's own scale, read from what the LMS exported: Moodle's worksheet
`Maximum Grade`, the `Points Possible` row of Canvas's export (kept in the sheet as Canvas wrote it: Canvas's
import reads that row as each column's points, so another value would change the assignment), Blackboard's
`[Total Pts: 100 Score]` in the column's header. A score is written as score / the assignment's maximum × the
column's, rounded to two decimals (halves up; Canvas too compares scores at two decimals): 17.5 of 20 is 87.5 in a
column worth 100. Where the roster (or Blackboard's header) is given but its maximum is missing, unreadable or zero,
nothing is written (`NoMaximum` names both maxima). Without a roster Canvas and Moodle state none: the points are
written as they are.
A student the roster cannot place is returned apart, never written under someone else's row. Canvas's sheet holds
only the identifying columns (in the export's order: its import requires `Section` last before the grades) and the
assignment's, so an import cannot revert another column (or a custom column such as Notes) edited since the export.
Every cell the LMS itself exported (a roster's row) is written back as the LMS wrote it (Moodle's own `-` stays `-`):
the instructor already holds that text in the LMS's own file. A cell the kit writes from elsewhere (a name from the
gradebook, which may come from the students' own file names) that begins with `=`, `+`, `-`, `@`, a tab or a
carriage return gets a leading `'` (OWASP's advice against CSV injection), so a spreadsheet shows it as text; the
scores are numbers.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import NamedTuple

from grader.lms.roster import Roster

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_IDENTITY = {*CANVAS_COLUMNS, "Integration ID", "Root Account"}
"""The columns by which Canvas's export identifies a student (the last two appear in some institutions' exports)."""
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Feedback comments"]
BLACKBOARD_COLUMNS = ["Last Name", "First Name", "Username"]
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_CANVAS_ID = re.compile(r"\s*\(\d+\)\s*$")
_BLACKBOARD_DECORATION = re.compile(r"\s*(?:\[[^\]]*\])?\s*(?:\|\s*\d+)?\s*$")
_BLACKBOARD_POINTS = re.compile(r"\[\s*Total Pts:\s*(?:up to\s+)?(?P<points>[^\s\]]+)", re.IGNORECASE)
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_CENTS = Decimal("0.01")


class NoSuchColumn(ValueError):
    """The roster has no column for the assignment; the message lists the columns it has."""


class NoMaximum(ValueError):
    """The LMS column's maximum is missing, unreadable or zero (or the assignment's is zero); the message names both."""


@dataclass(frozen=True)
class Grade:
    student_id: str  # the course's (nbgrader's) student id
    name: str  # "Last, First" as the gradebook has it
    score: float | None  # None: nothing handed in
    max_score: float


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


@dataclass(frozen=True)
class Scale:
    """How the kit's points become the LMS column's: `lms_maximum` None when the LMS states none (no roster)."""
    kit_maximum: float
    lms_maximum: float | None

    def written(self, score: float | None) -> str:
        if score is None:
            return ""
        value = Decimal(repr(score))
        if self.lms_maximum is not None:
            value = value * Decimal(repr(self.lms_maximum)) / Decimal(repr(self.kit_maximum))
        return format(value.quantize(_CENTS, rounding=ROUND_HALF_UP).normalize(), "f")

    def said(self) -> str:
        """The log's line on it."""
        if self.lms_maximum is None:
            return (f"the LMS states no maximum for the column without a roster: grades written as points out of "
                    f"{self.kit_maximum:g}, so the LMS column must be worth {self.kit_maximum:g} (give the roster to "
                    f"write them on the column's own scale)")
        if self.lms_maximum == self.kit_maximum:
            return f"the LMS column is worth {self.lms_maximum:g}, as the assignment: grades written as they are"
        return (f"the LMS column is worth {self.lms_maximum:g} and the assignment {self.kit_maximum:g}: each grade "
                f"written as score / {self.kit_maximum:g} × {self.lms_maximum:g}, rounded to two decimals")


def scale(kit_maximum: float, lms_text: str | None, where: str) -> Scale:
    """The scale from the LMS's maximum as it wrote it (`lms_text`; None: the LMS states none), read from `where`."""
    if lms_text is None:
        return Scale(kit_maximum, None)
    try:
        lms_maximum = float(Decimal(lms_text.replace(",", "."))) if _NUMBER.match(lms_text.strip()) else None
    except InvalidOperation:
        lms_maximum = None
    if not lms_maximum:
        found = "no value" if not lms_text.strip() else repr(lms_text)
        raise NoMaximum(f"the LMS column's maximum cannot be read: {where} has {found} (a positive number of points "
                        f"is needed); the assignment is worth {kit_maximum:g}. Set the column's maximum in the LMS "
                        f"(or make it worth {kit_maximum:g}) and download the roster again")
    if not kit_maximum and lms_maximum != kit_maximum:
        raise NoMaximum(f"the LMS column is worth {lms_maximum:g} but the assignment's maximum in the gradebook is "
                        f"{kit_maximum:g}: nothing to scale from (autograde the assignment first)")
    return Scale(kit_maximum, lms_maximum)


class Sheet(NamedTuple):
    text: str  # the CSV the LMS imports
    unplaced: list[str]  # the course's student ids the roster has no row for
    scale: Scale


def neutralised(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula."""
    return f"'{cell}" if cell.startswith(_FORMULA_START) else cell


def _to_csv(fieldnames: list[str], rows: list[dict[str, str]]) -> str:
    """Every cell as given: the LMS's own cells as it wrote them, the kit's already neutralised or numbers."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _kit_written(row: dict[str, str]) -> dict[str, str]:
    """A row the kit makes up (no roster): its text came from the gradebook, not from the LMS."""
    return {name: neutralised(value) for name, value in row.items()}


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


def _rows(grades: list[Grade], roster: Roster | None, column: str, without_roster,
          on_scale: Scale) -> tuple[list[dict], list[str]]:
    rows, unplaced = [], []
    for grade in grades:
        base = roster_row(roster, grade)
        if roster and base is None:
            unplaced.append(grade.student_id)
            continue
        row = dict(base) if base else _kit_written(without_roster(grade))
        row[column] = on_scale.written(grade.score)
        rows.append(row)
    return rows, unplaced


def _kit_maximum(grades: list[Grade]) -> float:
    return grades[0].max_score if grades else 0.0


def canvas_csv(grades: list[Grade], column: str, roster: Roster | None = None) -> Sheet:
    """The CSV Canvas imports: the identifying columns and the assignment's. `column`: the assignment's name (matched
    in the roster) or its column header, e.g. `Attention (2291)`."""
    if roster is None:
        on_scale = scale(_kit_maximum(grades), None, "")
        rows, unplaced = _rows(grades, None, column, lambda grade: {"Student": grade.name, "ID": grade.student_id},
                               on_scale)
        return Sheet(_to_csv([*CANVAS_COLUMNS, column], rows), unplaced, on_scale)
    column = column if column in roster.fieldnames else roster_column(roster, column, lambda name: _CANVAS_ID.sub("", name))
    points = roster.points_possible
    on_scale = scale(_kit_maximum(grades), points.get(column, "") if points else "",
                     f"the roster's Points Possible row, under {column!r}" if points else
                     "the roster, which has no Points Possible row (Canvas's own gradebook export has one)")
    rows, unplaced = _rows(grades, roster, column, None, on_scale)
    fieldnames = [name for name in roster.fieldnames if name in CANVAS_IDENTITY] + [column]
    return Sheet(_to_csv(fieldnames, [points, *rows]), unplaced, on_scale)


def moodle_csv(grades: list[Grade], roster: Roster | None = None) -> Sheet:
    """Moodle's grading worksheet with the grades, on the worksheet's `Maximum Grade`."""
    fieldnames = roster.fieldnames if roster else MOODLE_COLUMNS
    grade_column = next((name for name in fieldnames if name.strip().lower() == "grade"), "Grade")
    if roster is None:
        on_scale = scale(_kit_maximum(grades), None, "")
    else:
        maximum_column = next((name for name in fieldnames if name.strip().lower() == "maximum grade"), None)
        maxima = sorted({row.get(maximum_column, "") for row in roster.rows}) if maximum_column else []
        on_scale = scale(_kit_maximum(grades), maxima[0] if len(maxima) == 1 else ", ".join(maxima),
                         f"the worksheet's {maximum_column!r} column" if maximum_column
                         else "the worksheet, which has no 'Maximum Grade' column")
    rows, unplaced = _rows(grades, roster, grade_column, lambda grade: {
        "Identifier": f"Participant {grade.student_id}", "Full name": grade.name,
        "Maximum Grade": _score(grade.max_score)}, on_scale)
    return Sheet(_to_csv(fieldnames if grade_column in fieldnames else [*fieldnames, grade_column], rows),
                 unplaced, on_scale)


def blackboard_csv(grades: list[Grade], column: str, roster: Roster | None = None) -> Sheet:
    """The CSV Blackboard's Grade Centre upload takes, on the header's `Total Pts`. `column`: the assignment's
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
    points = _BLACKBOARD_POINTS.search(column)
    on_scale = scale(_kit_maximum(grades), points["points"] if points else "",
                     f"the column's header {column!r}" + ("" if points else " (no [Total Pts: …])"))
    rows, unplaced = _rows(grades, roster, column, without_roster, on_scale)
    return Sheet(_to_csv([*identity, column], rows), unplaced, on_scale)
