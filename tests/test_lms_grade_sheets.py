"""Are grades written in the layouts Canvas's and Moodle's gradebook imports take, each on its own student's row?"""
from __future__ import annotations

import csv
import io

import pytest

import lms_exports
from grader.lms.grade_sheets import Grade, canvas_csv, moodle_csv
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
