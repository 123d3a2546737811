"""Does `nbgrader zip_collect` bring Canvas, Moodle and Blackboard downloads into submitted/, times and late marks
in timestamp.txt, through the kit's safe extractor? And do grades go back in the LMS's import layout?

e2e tier: nbgrader's ZipCollectApp with the kit's plugins, and the export plugin, run in this process on a
course of their own (the zips from tests/lms_exports.py, with Chinese names and spaces); two tests run the
nbgrader commands themselves, one of them from Canvas's zip through autograde to Canvas's import CSV.
"""
from __future__ import annotations

import atexit
import csv
import functools
import io
import logging
import shutil
import tempfile
import zipfile
from datetime import datetime
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from nbgrader.apps.zipcollectapp import ZipCollectApp
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

import lms_exports
from grader.nbgrader.lms_export import LmsGradesExporter

pytestmark = [pytest.mark.e2e,  # nbgrader 0.9.6's add_submission under SQLAlchemy 2, as nbgrader_config.py filters it
              pytest.mark.filterwarnings("ignore:Object of type <SubmittedAssignment> not in session")]

ASSIGNMENT = "attention"
DUE = datetime(2026, 11, 30, 23, 59, 0)


@functools.cache
def empty_gradebook() -> Path:
    """nbgrader's tables without an assignment, made once: a new gradebook runs `alembic heads` in a
    subprocess (about 1.3 s of CPU), a copy of one does not."""
    folder = Path(tempfile.mkdtemp(prefix="attention-kit-gradebook-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}"):
        pass
    return folder / "gradebook.db"


def course(root: Path, due: datetime | None = DUE) -> Path:
    release = root / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    (release / "attention.ipynb").write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    shutil.copyfile(empty_gradebook(), root / "gradebook.db")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment(ASSIGNMENT, duedate=due)
    return root


def zip_collect(root: Path, zip_path: Path, caplog, **collector) -> str:
    """Run zip_collect as `nbgrader zip_collect attention` would with the kit's config, on `zip_path` in archive/."""
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    zip_path.rename(archive / zip_path.name)
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.ZipCollectApp.collector_plugin = "grader.nbgrader.lms_collector.LmsCollector"
    config.ZipCollectApp.extractor_plugin = "grader.nbgrader.safe_extractor.SafeExtractor"
    for key, value in collector.items():
        setattr(config.LmsCollector, key, value)
    app = ZipCollectApp(config=config)
    app.coursedir = CourseDirectory(parent=app)  # what initialize() makes, without reading the repo's config file
    app.log = logging.getLogger("zip_collect")
    with caplog.at_level(logging.INFO, logger="zip_collect"):
        app.init_plugins()
        app.extract_archive_files()
        app.process_extracted_files()
    return caplog.text


def submitted(root: Path) -> dict[str, str | None]:
    """student id -> the timestamp.txt nbgrader wrote (None: no file), for every collected attention.ipynb."""
    found = {}
    for notebook in sorted((root / "submitted").glob(f"*/{ASSIGNMENT}/attention.ipynb")):
        stamp = notebook.parent / "timestamp.txt"
        found[notebook.parent.parent.name] = stamp.read_text() if stamp.exists() else None
    return found


def test_canvas_download_collected_with_late_marks_in_timestamp_txt(tmp_path, caplog):
    """Is every Canvas user collected, each LATE one timestamped after the due date, every other file named?"""
    root = course(tmp_path / "course")
    zip_path, expected, late, left_out = lms_exports.canvas_zip(tmp_path)
    log = zip_collect(root, zip_path, caplog)
    stamps = submitted(root)
    assert set(stamps) == set(expected)
    assert {sid for sid, stamp in stamps.items() if stamp and datetime.fromisoformat(stamp) > DUE} == late
    assert all(stamps[sid] is None for sid in set(expected) - late)
    for name in left_out:
        assert f"Not collected: 'submissions/{name}'" in log
    assert "Canvas marks 2 student(s) LATE: 1002, 1005" in log


def test_moodle_download_with_roster_collected_under_course_ids(tmp_path, caplog):
    """Are Moodle's participant folders collected under the worksheet's ID numbers, with Moodle's file times?"""
    root = course(tmp_path / "course")
    zip_path, expected, left_out = lms_exports.moodle_zip(tmp_path)
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
    log = zip_collect(root, zip_path, caplog, lms="moodle", roster=str(roster))
    stamps = submitted(root)
    assert set(stamps) == set(expected) and all(stamps.values())
    assert datetime.fromisoformat(stamps["2026004"]) > DUE  # the later of Chen Jing's files, uploaded on Dec 1
    for name in left_out:
        assert name in log


def test_blackboard_gradebook_zip_is_the_class_archive_and_attempt_times_kept(tmp_path, caplog):
    """Is Blackboard's `gradebook_…zip` read as the class's (not student 'gradebook''s), attempt times kept?"""
    root = course(tmp_path / "course")
    zip_path, expected, left_out = lms_exports.blackboard_zip(tmp_path)
    log = zip_collect(root, zip_path, caplog)
    stamps = submitted(root)
    assert {sid: datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S") for sid, stamp in stamps.items()} \
        == {sid: time for sid, (_, time) in expected.items()}
    assert "names student" not in log


def test_zip_safety_rules_apply_to_lms_downloads(tmp_path, caplog):
    """Is a climbing or linked entry in a Canvas download refused and named, and the honest files still collected?"""
    root = course(tmp_path / "course")
    zip_path, expected, *_ = lms_exports.canvas_zip(tmp_path)
    with zipfile.ZipFile(zip_path, "a") as archive:
        archive.writestr("../evil_1009_5009_attention.ipynb", lms_exports.NOTEBOOK)
        link = zipfile.ZipInfo("linky_1010_5010_attention.ipynb")
        link.create_system, link.external_attr = 3, (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    log = zip_collect(root, zip_path, caplog, lms="canvas")
    assert set(submitted(root)) == set(expected)
    assert "climbs out" in log and "links are never created or followed" in log
    assert not (tmp_path / "course" / "downloaded" / ASSIGNMENT / "evil_1009_5009_attention.ipynb").exists()


def export(root: Path, **traits) -> str:
    exporter = LmsGradesExporter(to=str(root / "out.csv"), assignment=[ASSIGNMENT], **traits)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        exporter.export(gradebook)
    return (root / "out.csv").read_text(encoding="utf-8")


def test_grades_back_to_canvas_through_the_roster(tmp_path):
    """Does the Canvas export give each roster row its score, in the assignment's own column, handed in or not?"""
    root = course(tmp_path / "course")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        for sid in ("2026001", "2026002"):
            gradebook.add_student(sid)
        gradebook.add_submission(ASSIGNMENT, "2026001")
    roster = lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention (777)"],
        ["    Points Possible", "", "", "", "", "20.00"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", ""],
        ["李, 雷", "1002", "2026002", "ll", "LLM 101", ""]])
    rows = list(csv.DictReader(io.StringIO(export(root, lms="canvas", roster=str(roster)))))
    assert [(r["ID"], r["SIS User ID"], r["attention (777)"]) for r in rows] == [("1001", "2026001", "0"),
                                                                                 ("1002", "2026002", "")]


def test_grades_back_to_moodle_without_roster_use_participant_ids(tmp_path):
    """Without a roster, is the student id (Moodle's participant id, as collected) written back as `Participant <id>`?"""
    root = course(tmp_path / "course")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_student("1001", last_name="王", first_name="小明")
        gradebook.add_submission(ASSIGNMENT, "1001")
    rows = list(csv.DictReader(io.StringIO(export(root, lms="moodle"))))
    assert [(r["Identifier"], r["Full name"], r["Grade"]) for r in rows] == [("Participant 1001", "王, 小明", "0")]


def test_nbgrader_zip_collect_command_uses_the_lms_collector(tmp_path):
    """Does `nbgrader zip_collect attention`, with the repo's nbgrader_config.py, detect a Canvas download and
    write the LATE students' timestamp.txt?"""
    import subprocess
    import sys

    from grader.process import ROOT, nbgrader_env

    root = course(tmp_path / "course")
    zip_path, expected, late, _ = lms_exports.canvas_zip(tmp_path)
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    zip_path.rename(archive / zip_path.name)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "zip_collect", ASSIGNMENT, f"--CourseDirectory.root={root}"],
                          cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "the files are a canvas export" in done.stderr
    stamps = submitted(root)
    assert set(stamps) == set(expected) and {sid for sid, stamp in stamps.items() if stamp} == late


def test_canvas_round_trip_late_work_is_penalised_and_graded_back(tmp_path):
    """From Canvas's zip to Canvas's import CSV through nbgrader: two correct notebooks, one LATE; with the
    course's late policy `zero`, is the late one 0 and the on-time one full marks, on each student's Canvas row?"""
    import colab_notebooks as cn
    from nbgrader_course import Course, correct_notebook

    course = Course.create(tmp_path / "course")
    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment(ASSIGNMENT, duedate=DUE)
    notebook = tmp_path / "nb.ipynb"
    cn.write(cn.colab_saved(cn.strip_nbgrader(correct_notebook(course))), notebook)
    archive = course.root / "downloaded" / ASSIGNMENT / "archive"
    lms_exports.write_zip(archive / "submissions.zip", {
        "wangxiaoming_1001_5001_attention.ipynb": (notebook.read_text(encoding="utf-8"), lms_exports.NOV30),
        "李雷_LATE_1002_5002_Copy of attention.ipynb": (notebook.read_text(encoding="utf-8"), lms_exports.DEC1)})
    course.nbgrader("zip_collect", ASSIGNMENT)
    course.nbgrader("autograde", ASSIGNMENT, "--LateSubmissionPlugin.penalty_method=zero")
    out = tmp_path / "canvas_grades.csv"
    course.nbgrader("export", "--exporter=grader.nbgrader.lms_export.LmsGradesExporter",
                    "--LmsGradesExporter.lms=canvas", f"--assignment={ASSIGNMENT}", f"--to={out}")
    rows = {r["ID"]: r[ASSIGNMENT] for r in csv.DictReader(io.StringIO(out.read_text(encoding="utf-8")))}
    assert course.total("1001") == course.total("1002") == 20.0  # both notebooks earn full marks before the policy
    assert rows == {"1001": "20", "1002": "0"}


def test_a_clean_extraction_is_information_not_a_warning(tmp_path, caplog):
    """Nothing left out: the safe extractor's summary is INFO, so the warnings an instructor reads are only the
    ones that matter (a file left out, a conflict)."""
    root = course(tmp_path / "course")
    zip_path, expected, *_ = lms_exports.canvas_zip(tmp_path)
    zip_collect(root, zip_path, caplog, lms="canvas")
    assert set(submitted(root)) == set(expected)
    summary = [r for r in caplog.records if "Safe extractor:" in r.getMessage()]
    assert len(summary) == 1 and summary[0].levelno == logging.INFO, [r.getMessage() for r in summary]
