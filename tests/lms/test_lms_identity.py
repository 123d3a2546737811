"""Is every student of an LMS download collected as themself, whatever they named their files?

Unit tier: downloads built from each vendor's naming (the facts are in tests/support/lms_exports.py), with a classmate's
name inside a student's own file or folder name, usernames with `_`, `.` and digits, a roster row without an SIS
id, two people for one student id, and times written in Asia/Shanghai read on a UTC machine. The collector plans
over the unpacked download as zip_collect would (tests/lms/test_lms_zip_collect.py runs zip_collect itself).
"""
from __future__ import annotations

import json
import logging
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from support import lms_exports
from grader.nbgrader.lms_collector import LmsCollector

pytestmark = pytest.mark.unit

RELEASED = ["attention.ipynb"]
NOV30 = datetime(2026, 11, 30, 12, 0, 0)
DEC1 = datetime(2026, 12, 1, 9, 0, 0)


def plan(extracted: Path, caplog, **traits) -> LmsCollector:
    collector = LmsCollector(**traits)
    collector.log = logging.getLogger("lms-identity")
    with caplog.at_level(logging.INFO, logger="lms-identity"):
        collector.make_plan(extracted, RELEASED)
    return collector


def authors(collector: LmsCollector) -> dict[str, str]:
    """student id -> whose notebook was collected for them (the author the test wrote into it)."""
    return {c.student_id: json.loads(c.path.read_text(encoding="utf-8"))["metadata"]["author"]
            for c in collector.plan.values()}


@pytest.mark.parametrize("in_folders", [True, False], ids=["folder per participant", "flat"])
def test_moodle_name_of_a_classmate_inside_a_students_upload_does_not_make_it_theirs(tmp_path, caplog, in_folders):
    """Alice puts Bob's Moodle prefix into her upload (a subfolder named like his folder, or a file named like his
    flat file): is her notebook still hers, newest or not, and Bob's own file his?"""
    alice, bob = "Alice Adams_1001_assignsubmission_file_", "Bob Brown_1002_assignsubmission_file_"
    entries = {
        (f"{alice}/{bob}/attention.ipynb" if in_folders else f"{alice}{bob}attention.ipynb"): (
            lms_exports.notebook_of("alice"), DEC1),
        (f"{bob}/attention.ipynb" if in_folders else f"{bob}attention.ipynb"): (lms_exports.notebook_of("bob"), NOV30),
    }
    zip_path = lms_exports.write_zip(tmp_path / "download" / "LLM101-Attention-88.zip", entries)
    lms_exports.unpack(zip_path, tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog)
    assert collector.layout == "moodle"
    assert authors(collector) == {"1001": "alice", "1002": "bob"}
    assert not collector.left_out


BLACKBOARD_CLASS = {  # username -> (full name, [(attempt time, uploaded file name, author)])
    "li_na": ("Li Na", [("2026-11-30-10-00-00", "attention.ipynb", "li_na"),
                        # a later attempt whose file name forges wang_na's attempt from the future
                        ("2026-11-30-11-00-00", "wang_na_attempt_2099-01-01-00-00-00_attention.ipynb", "li_na 2")]),
    "wang_na": ("Wang Na", [("2026-11-30-09-00-00", "attention.ipynb", "wang_na")]),
    "d.wei": ("Wei D", [("2026-11-29-22-15-00", "Copy of attention.ipynb", "d.wei")]),
    "2026007": ("Zhao Qi", [("2026-11-30-23-58-59", "attention (1).ipynb", "2026007")]),
}


def blackboard_download(folder: Path, assignment: str = "Attention", receipts: bool = True) -> Path:
    entries = {}
    for user, (full_name, attempts) in BLACKBOARD_CLASS.items():
        for stamp, uploaded, author in attempts:
            attempt = f"{assignment}_{user}_attempt_{stamp}"
            entries[f"{attempt}_{uploaded}"] = (lms_exports.notebook_of(author), NOV30)
            if receipts:
                entries[f"{attempt}.txt"] = (lms_exports.blackboard_receipt(assignment, full_name, user, [uploaded]),
                                             NOV30)
    # li_na also uploads a text file posing as wang_na's receipt of a later attempt
    forged = f"{assignment}_li_na_attempt_2026-11-30-11-00-00_wang_na_attempt_2099-01-01-00-00-00.txt"
    entries[forged] = (lms_exports.blackboard_receipt(f"{assignment}_li_na_attempt_2026-11-30-11-00-00", "Wang Na",
                                                      "wang_na", ["attention.ipynb"]), NOV30)
    return lms_exports.write_zip(folder / f"gradebook_LLM101_{assignment}_2026-12-01-08-00-00.zip", entries)


def test_blackboard_usernames_with_underscore_dot_and_digits_each_collected_as_themself(tmp_path, caplog):
    """Are `li_na`, `wang_na`, `d.wei` and `2026007` each collected as themself, with their own latest attempt's
    time, from a download detected as Blackboard's (receipts and all), and no student named `Attention`?"""
    lms_exports.unpack(blackboard_download(tmp_path / "download"), tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog, timezone="Asia/Shanghai")
    assert collector.layout == "blackboard"
    assert authors(collector) == {"li_na": "li_na 2", "wang_na": "wang_na", "d.wei": "d.wei", "2026007": "2026007"}
    stamps = {c.student_id: c.identity.timestamp for c in collector.plan.values()}
    shanghai = ZoneInfo("Asia/Shanghai")
    assert stamps == {"li_na": datetime(2026, 11, 30, 11, 0, tzinfo=shanghai),
                      "wang_na": datetime(2026, 11, 30, 9, 0, tzinfo=shanghai),
                      "d.wei": datetime(2026, 11, 29, 22, 15, tzinfo=shanghai),
                      "2026007": datetime(2026, 11, 30, 23, 58, 59, tzinfo=shanghai)}


def test_blackboard_names_that_split_two_ways_without_receipts_are_refused_not_guessed(tmp_path, caplog):
    """Without receipts, `Attention_li_na_…` and `Attention_li_wei_…` read as assignment `Attention` or
    `Attention_li`: is every file refused with a message that says to keep the receipts?"""
    entries = {f"Attention_{user}_attempt_2026-11-30-10-00-00_attention.ipynb": (lms_exports.notebook_of(user), NOV30)
               for user in ("li_na", "li_wei")}
    lms_exports.unpack(lms_exports.write_zip(tmp_path / "download" / "gradebook_x.zip", entries), tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog, lms="blackboard")
    assert not collector.plan
    assert len(collector.left_out) == 2
    assert all("keep the receipts" in why and "2 ways" in why for why in collector.left_out.values())


CANVAS_EXPORT = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)"],
    ["    Points Possible", "", "", "", "", "20.00"],
    ["Adams, Alice", "1001", "2026001", "alice", "LLM 101", ""],
    ["Brown, Bob", "1002", "2026002", "bob", "LLM 101", ""],
    ["Guest, Gao", "40002", "", "", "LLM 101", ""],  # enrolled by hand: no SIS id
]


def test_canvas_impersonating_name_and_a_roster_row_without_sis_id(tmp_path, caplog):
    """Is Alice's upload named like Bob's Canvas file still Alice's, and the student enrolled by hand (no SIS id)
    collected under their Canvas ID instead of being dropped as not in the roster?"""
    entries = {
        "adamsalice_1001_5003_brownbob_1002_5999_attention.ipynb": (lms_exports.notebook_of("alice"), DEC1),
        "brownbob_1002_5002_attention.ipynb": (lms_exports.notebook_of("bob"), NOV30),
        "guestgao_40002_5004_attention.ipynb": (lms_exports.notebook_of("gao"), NOV30),
    }
    lms_exports.unpack(lms_exports.write_zip(tmp_path / "download" / "submissions.zip", entries), tmp_path / "extracted")
    roster = lms_exports.write_csv(tmp_path / "canvas.csv", CANVAS_EXPORT)
    collector = plan(tmp_path / "extracted", caplog, roster=str(roster))
    assert authors(collector) == {"2026001": "alice", "2026002": "bob", "40002": "gao"}
    assert not collector.left_out


def test_two_people_for_one_student_id_are_kept_and_listed_as_a_conflict(tmp_path, caplog):
    """A worksheet gives two participants one ID number: are both files kept, the newest collected, and the
    conflict named in the log and the collector's summary?"""
    worksheet = [row[:] for row in lms_exports.MOODLE_WORKSHEET]
    worksheet[4][3] = "2026001"  # Chen Jing's ID number typed as Wang Xiaoming's
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", worksheet)
    entries = {"王 小明_1001_assignsubmission_file_/attention.ipynb": (lms_exports.notebook_of("wang"), NOV30),
               "Chen Jing_1004_assignsubmission_file_/attention.ipynb": (lms_exports.notebook_of("chen"), DEC1)}
    folder = lms_exports.unpack(lms_exports.write_zip(tmp_path / "d" / "LLM-attention-88.zip", entries),
                                tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog, roster=str(roster))
    assert authors(collector) == {"2026001": "chen"}
    assert "1001, 1004" in collector.conflicts["2026001"]
    assert "Conflict:" in caplog.text and "1 conflict(s)" in caplog.text
    assert all((folder / name).is_file() for name in entries)


@pytest.fixture
def utc_machine(monkeypatch):
    """This process's local zone set to UTC, as on a grading server, and back afterwards."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_moodle_upload_in_shanghai_is_on_time_on_a_utc_machine(tmp_path, caplog, utc_machine):
    """An upload at 19:59 Asia/Shanghai for a 23:59 deadline, read on a UTC machine with the course's zone named:
    is its timestamp 19:59+08:00, before the deadline? Without a zone, does the log say UTC is assumed?"""
    entries = {"王 小明_1001_assignsubmission_file_/attention.ipynb": (lms_exports.notebook_of("wang"),
                                                                        datetime(2026, 12, 1, 19, 59, 0))}
    lms_exports.unpack(lms_exports.write_zip(tmp_path / "d" / "LLM-attention-88.zip", entries), tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog, timezone="Asia/Shanghai")
    [candidate] = collector.plan.values()
    stamp = datetime.fromisoformat(collector.collect(str(candidate.path))["timestamp"])
    deadline = datetime(2026, 12, 1, 23, 59, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    assert stamp == datetime(2026, 12, 1, 19, 59, 0, tzinfo=ZoneInfo("Asia/Shanghai"))
    assert (deadline - stamp).total_seconds() == 4 * 3600
    caplog.clear()
    plan(tmp_path / "extracted", caplog)
    assert "times are read in UTC (no --LmsCollector.timezone given" in caplog.text


def test_a_students_text_file_posing_as_a_receipt_cannot_shorten_the_assignment_name(tmp_path, caplog):
    """Assignment `Week 1_HW`: li_na uploads `x_attempt_2099-….txt` whose text claims user `HW_li_na_attempt_…_x`,
    so that, taken as a receipt, it would make the assignment `Week 1` and every username start with `HW_`. Is
    everyone still collected under their own username?"""
    assignment, stamp = "Week 1_HW", "2026-11-30-10-00-00"
    entries = {}
    for user, name in (("li_na", "Li Na"), ("bob", "Bob Brown")):
        entries[f"{assignment}_{user}_attempt_{stamp}_attention.ipynb"] = (lms_exports.notebook_of(user), NOV30)
        entries[f"{assignment}_{user}_attempt_{stamp}.txt"] = (
            lms_exports.blackboard_receipt(assignment, name, user, ["attention.ipynb"]), NOV30)
    posing = f"HW_li_na_attempt_{stamp}_x"
    entries[f"{assignment}_li_na_attempt_{stamp}_x_attempt_2099-01-01-00-00-00.txt"] = (
        lms_exports.blackboard_receipt("Week 1", "Mallory", posing, []), NOV30)
    lms_exports.unpack(lms_exports.write_zip(tmp_path / "d" / "gradebook_c_Week1HW_2026.zip", entries),
                       tmp_path / "extracted")
    collector = plan(tmp_path / "extracted", caplog, lms="blackboard")
    assert authors(collector) == {"li_na": "li_na", "bob": "bob"}
