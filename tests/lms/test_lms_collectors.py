"""Does the LMS collector place every file of a Canvas, Moodle or Blackboard download, and name every file it cannot?

Unit tier: the downloads are built from each LMS's naming rules (tests/support/lms_exports.py) and unpacked
here; the collector plans over them without nbgrader running (tests/lms/test_lms_zip_collect.py runs it).
"""
from __future__ import annotations

import zipfile
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

import pytest

from support import lms_exports
from support.lms_exports import unpack
from grader.lms import names
from grader.lms.roster import Roster
from grader.nbgrader.lms_collector import LmsCollector

pytestmark = pytest.mark.unit

RELEASED = ["attention.ipynb"]


def plan(extracted: Path, **traits) -> LmsCollector:
    collector = LmsCollector(**traits)
    collector.make_plan(extracted, RELEASED)
    return collector


def collected(collector: LmsCollector, folder: Path) -> dict[str, str]:
    """student id -> the student's file collected (the kit may collect it from its own copy)."""
    return {c.student_id: str(c.student_file.relative_to(folder)) for c in collector.plan.values()}


def left_out(collector: LmsCollector, folder: Path) -> dict[str, str]:
    return {str(Path(path).relative_to(folder)): why for path, why in collector.left_out.items()}


@pytest.mark.parametrize("lms", ["auto", "canvas"])
def test_canvas_every_student_collected_late_marks_kept(tmp_path, lms):
    """Is each Canvas user collected once (the later attachment of two), LATE kept, the rest named with reasons?"""
    zip_path, expected, late, expected_left_out = lms_exports.canvas_zip(tmp_path / "download")
    folder = unpack(zip_path, tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", lms=lms)
    assert collector.layout == "canvas"
    assert collected(collector, folder) == expected
    assert {c.student_id for c in collector.plan.values() if c.identity.late} == late
    reasons = left_out(collector, folder)
    assert set(reasons) == set(expected_left_out)
    for name, word in expected_left_out.items():
        assert word in reasons[name]
    assert "Canvas's attachment id" in reasons["chenjing_1004_5004_attention.ipynb"]


def test_canvas_late_file_is_timestamped_just_after_the_due_date(tmp_path):
    """Does a LATE file carry a timestamp past the gradebook's due date (and an on-time file none)?"""
    zip_path, *_ = lms_exports.canvas_zip(tmp_path / "download")
    unpack(zip_path, tmp_path / "extracted")
    due = datetime(2026, 11, 30, 23, 59, tzinfo=timezone.utc)
    collector = LmsCollector(lms="canvas")
    collector.due_date = lambda: due
    collector.make_plan(tmp_path / "extracted", RELEASED)
    stamps = {c.student_id: collector.collect(path).get("timestamp") for path, c in collector.plan.items()}
    assert datetime.fromisoformat(stamps["1002"]) > due and datetime.fromisoformat(stamps["1005"]) > due
    assert stamps["1001"] is None and stamps["1003"] is None


@pytest.mark.parametrize("in_folders", [True, False], ids=["folder per participant", "flat"])
def test_moodle_with_roster_every_student_collected(tmp_path, in_folders):
    """Are Moodle participants mapped to the course's ids through the grading worksheet, the newer of two kept,
    and the online-text entry and an unknown participant named?"""
    zip_path, expected, expected_left_out = lms_exports.moodle_zip(tmp_path / "download", in_folders)
    folder = unpack(zip_path, tmp_path / "extracted")
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
    collector = plan(tmp_path / "extracted", roster=str(roster))
    assert collector.layout == "moodle"
    assert collected(collector, folder) == expected
    reasons = left_out(collector, folder)
    assert set(reasons) == set(expected_left_out)
    for name, word in expected_left_out.items():
        assert word in reasons[name]
    for path, candidate in collector.plan.items():  # Moodle's wall-clock upload time, read in UTC (no zone given)
        stamp = datetime.fromisoformat(collector.collect(path)["timestamp"])
        assert stamp.utcoffset().total_seconds() == 0
        assert stamp.replace(tzinfo=None) == datetime.fromtimestamp(Path(path).stat().st_mtime)


def test_moodle_by_name_when_the_roster_has_no_participant_ids(tmp_path):
    """Does a roster of names and student ids place Moodle's folders by the full name, and refuse a shared name?"""
    zip_path, expected, _ = lms_exports.moodle_zip(tmp_path / "download")
    folder = unpack(zip_path, tmp_path / "extracted")
    roster = lms_exports.write_csv(tmp_path / "names.csv", [
        ["name", "student_id"], ["王小明", "2026001"], ["mary ann o'brien", "2026002"], ["Chen Jing", "2026004"],
        ["Zhang San", "2026098"], ["zhang  san", "2026099"]])
    collector = plan(tmp_path / "extracted", lms="moodle", roster=str(roster))
    assert collected(collector, folder) == expected
    assert "2 people named 'Zhang San'" in left_out(collector, folder)[
        "Zhang San_1099_assignsubmission_file_/attention.ipynb"]


def test_blackboard_attempt_times_order_and_timestamp(tmp_path):
    """Is the later Blackboard attempt kept (whatever the file times), with its attempt time in the course's zone?"""
    zip_path, expected, expected_left_out = lms_exports.blackboard_zip(tmp_path / "download")
    folder = unpack(zip_path, tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", timezone="Asia/Shanghai")
    assert collector.layout == "blackboard"
    assert collected(collector, folder) == {sid: name for sid, (name, _) in expected.items()}
    reasons = left_out(collector, folder)
    assert set(reasons) == set(expected_left_out)
    for name, word in expected_left_out.items():
        assert word in reasons[name]
    for path, candidate in collector.plan.items():
        stamp = datetime.fromisoformat(collector.collect(path)["timestamp"])
        assert stamp.utcoffset().total_seconds() == 8 * 3600
        assert stamp.strftime("%Y-%m-%d %H:%M:%S") == expected[candidate.student_id][1]


def test_files_of_another_layout_are_named_not_dropped(tmp_path):
    """In a Canvas folder, is a `<student_id>_…` file named as not Canvas's, with the layout it was read as?"""
    zip_path, expected, *_ = lms_exports.canvas_zip(tmp_path / "download")
    folder = unpack(zip_path, tmp_path / "extracted")
    (folder / "s999_attention.ipynb").write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    collector = plan(tmp_path / "extracted")
    assert collected(collector, folder) == expected
    assert "read as a canvas export" in left_out(collector, folder)["s999_attention.ipynb"]


def test_student_id_layout_is_still_detected(tmp_path):
    """Does a folder of `<student_id>_…` files stay the kit's own layout (no LMS collector change for them)?"""
    for name in ["s1_attention.ipynb", "王小明_Copy of attention.ipynb", "2023-cs.01_attention (1).ipynb"]:
        (tmp_path / name).write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    collector = plan(tmp_path)
    assert collector.layout == "student_id"
    assert sorted(c.student_id for c in collector.plan.values()) == ["2023-cs.01", "s1", "王小明"]


@pytest.mark.parametrize("path, layout, who, file_name", [
    ("李雷_LATE_1002_5002_Copy of attention.ipynb", "canvas", "1002", "Copy of attention.ipynb"),
    ("X/王 小明_1001_assignsubmission_file_/attention (1).ipynb", "moodle", "1001", "attention (1).ipynb"),
    ("王 小明_1001_assignsubmission_file_attention.ipynb", "moodle", "1001", "attention.ipynb"),
    ("HW 1_s1_attempt_2026-11-30-23-59-00_a b.ipynb", "blackboard", "s1", "a b.ipynb"),
])
def test_names_read_as_each_lms_writes_them(path, layout, who, file_name):
    """Is each LMS's own file name read to the LMS's id and the file as uploaded?"""
    hand_in = names.hand_in(layout, PurePosixPath(path))
    assert (hand_in.who, hand_in.file_name) == (who, file_name)


def test_roster_reads_canvas_gradebook_export(tmp_path):
    """Does Canvas's gradebook export (with its Points Possible row) map user ids and names to SIS ids?"""
    path = lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention (777)"],
        ["    Points Possible", "", "", "", "", "20.00"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", ""],
        ["李, 雷", "1002", "2026002", "ll", "LLM 101", ""]])
    roster = Roster.read(path)
    assert roster.student_for(names.HandIn("canvas", "1001", "a.ipynb")) == ("2026001", "")
    assert roster.student_for(names.HandIn("canvas", "9", "a.ipynb", name="李雷")) == ("2026002", "")
    assert roster.student_for(names.HandIn("canvas", "9", "a.ipynb", name="nobody"))[0] is None


@pytest.mark.parametrize("name", ["HW_.._attempt_2026-11-30-23-59-00_attention.ipynb",
                                  "HW_-x_attempt_2026-11-30-23-59-00_attention.ipynb"])
def test_a_blackboard_username_that_is_no_id_is_refused(name):
    """Is a username that could climb out of submitted/ (`..`) or is no id refused, not used as a folder name?"""
    assert isinstance(names.hand_in("blackboard", PurePosixPath(name)), str)


def test_a_student_id_file_the_roster_does_not_know_is_left_out_and_said(tmp_path):
    """`<student_id>_…` files with a roster: is a file whose id no roster row has (`intruder_attention.ipynb`) left
    out with the reason, and the roster's student collected?"""
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
    folder = tmp_path / "extracted"
    folder.mkdir()
    for name in ("2026001_attention.ipynb", "intruder_attention.ipynb"):
        (folder / name).write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    collector = plan(folder, roster=str(roster))
    assert collector.layout == "student_id"
    assert collected(collector, folder) == {"2026001": "2026001_attention.ipynb"}
    assert "not in the roster" in left_out(collector, folder)["intruder_attention.ipynb"]


def zip_names(zip_path: Path) -> list[PurePosixPath]:
    with zipfile.ZipFile(zip_path) as archive:
        return [PurePosixPath(name) for name in archive.namelist()]


@pytest.mark.parametrize("in_folders", [True, False], ids=["folder per participant", "flat"])
def test_moodles_download_is_told_by_its_members_whatever_its_name_starts_with(tmp_path, in_folders):
    """Moodle's members (`<name>_<id>_assignsubmission_…`, online text included) in a zip named as Moodle names it: is it
    Moodle's class download, even named `LLM_2026-Attention-88`?"""
    members = zip_names(lms_exports.moodle_zip(tmp_path, in_folders)[0])
    assert names.class_download("LLM_2026-Attention-88", members) == "moodle"
    assert names.class_download("CS101 注意力-Attention-88", members) == "moodle"


def test_a_students_own_archive_is_no_class_download_whatever_its_members_are_named(tmp_path):
    """A student's `alice_hw.zip` holding files named as Moodle, Canvas or Blackboard name a classmate's, or Moodle's
    members beside a file of the student's own: is none of them taken for a class download (whose members would name
    anyone), so that the archive still delivers only Alice's notebook?"""
    moodle = [PurePosixPath("Bob Li_1002_assignsubmission_file_attention.ipynb")]
    assert names.class_download("alice_hw", moodle) == ""
    assert names.class_download("alice_hw-2", zip_names(lms_exports.canvas_zip(tmp_path)[0])) == ""
    assert names.class_download("alice_hw-2", zip_names(lms_exports.blackboard_zip(tmp_path)[0])) == ""
    assert names.class_download("alice_hw-2", [*moodle, PurePosixPath("attention.ipynb")]) == ""
    assert names.class_download("alice_hw-2", [PurePosixPath("__MACOSX/._x"), PurePosixPath(".DS_Store")]) == ""
