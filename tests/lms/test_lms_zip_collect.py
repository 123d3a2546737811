"""Does `nbgrader zip_collect` bring Canvas, Moodle and Blackboard downloads into submitted/, times and late marks
in timestamp.txt, through the kit's safe extractor? And do grades go back in the LMS's import layout?

e2e tier: nbgrader's ZipCollectApp with the kit's plugins, and the export plugin, run in this process on a
course of their own (the zips from tests/support/lms_exports.py, with Chinese names and spaces); two tests run the
nbgrader commands themselves, one of them from Canvas's zip through autograde to Canvas's import CSV.
"""
from __future__ import annotations

import atexit
import csv
import functools
import io
import logging
import os
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

from support import lms_exports
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
    """A course whose gradebook has the assignment worth 20 points (one grade cell), as generate_assignment records it."""
    release = root / "release" / ASSIGNMENT
    release.mkdir(parents=True)
    (release / "attention.ipynb").write_text(lms_exports.NOTEBOOK, encoding="utf-8")
    shutil.copyfile(empty_gradebook(), root / "gradebook.db")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment(ASSIGNMENT, duedate=due)
        gradebook.add_notebook("attention", ASSIGNMENT)
        gradebook.add_grade_cell("sdpa", "attention", ASSIGNMENT, max_score=20.0, cell_type="code")
    return root


def scored(root: Path, student: str, points: float, **names) -> None:
    """`student` in the gradebook with a submission worth `points` of the 20."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_student(student, **names)
        gradebook.add_submission(ASSIGNMENT, student)
        gradebook.find_grade("sdpa", "attention", ASSIGNMENT, student).manual_score = points
        gradebook.db.commit()


def zip_collect(root: Path, zip_path: Path, caplog, force: bool = False, extractor: dict | None = None,
                **collector) -> str:
    """Run zip_collect as `nbgrader zip_collect attention [--force]` would with the kit's config, on `zip_path` in
    archive/."""
    archive = root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True, exist_ok=True)
    zip_path.rename(archive / zip_path.name)
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.assignment_id = ASSIGNMENT
    config.ZipCollectApp.collector_plugin = "grader.nbgrader.lms_collector.LmsCollector"
    config.ZipCollectApp.extractor_plugin = "grader.nbgrader.safe_extractor.SafeExtractor"
    config.ZipCollectApp.force = config.ExtractorPlugin.force = force
    for key, value in collector.items():
        setattr(config.LmsCollector, key, value)
    for key, value in (extractor or {}).items():
        setattr(config.SafeExtractor, key, value)
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
    assert [(r["ID"], r["SIS User ID"], r["attention (777)"]) for r in rows] == [("", "", "20.00"), ("1001", "2026001", "0"),
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
    from support import colab_notebooks as cn
    from support.nbgrader_course import Course, correct_notebook

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


def test_one_students_ten_thousand_uploads_cost_only_their_own_extras(tmp_path, caplog):
    """One Canvas student uploads 10,000 extra files: is the class archive still extracted, every student collected
    (that student's notebook too), and their extras named in one line, not one per file?"""
    root = course(tmp_path / "course")
    entries = {f"student{n}_{1000 + n}_{5000 + n}_attention.ipynb": (lms_exports.NOTEBOOK, lms_exports.NOV30)
               for n in range(15)}
    entries["spammer_1099_6000_attention.ipynb"] = (lms_exports.NOTEBOOK, lms_exports.NOV30)
    entries.update({f"spammer_1099_{7000 + n}_junk{n}.txt": ("x", lms_exports.NOV30) for n in range(10_000)})
    log = zip_collect(root, lms_exports.write_zip(tmp_path / "submissions.zip", entries), caplog)
    assert set(submitted(root)) == {str(1000 + n) for n in range(15)} | {"1099"}
    assert "refused as a whole" not in log
    assert "9901 file(s) of canvas 1099" in log and "over the limit of 100" in log


def test_one_students_oversized_uploads_cost_only_their_own_extras(tmp_path, caplog):
    """With a student's share of a class download at 1 MiB (and a student's own archive at 1 MiB in all), does a
    student uploading 3 × 600 KiB lose only the files past their share, the class and their notebook collected?"""
    root = course(tmp_path / "course")
    entries = {f"student{n}_{1000 + n}_{5000 + n}_attention.ipynb": (lms_exports.NOTEBOOK, lms_exports.NOV30)
               for n in range(3)}
    entries["hoarder_1099_6000_attention.ipynb"] = (lms_exports.NOTEBOOK, lms_exports.NOV30)
    entries.update({f"hoarder_1099_{7000 + n}_data{n}.bin": (os.urandom(600 << 10).hex()[: 600 << 10],
                                                               lms_exports.NOV30) for n in range(3)})
    log = zip_collect(root, lms_exports.write_zip(tmp_path / "submissions.zip", entries), caplog,
                      extractor={"max_bytes_per_student": 1 << 20, "max_total_bytes": 1 << 20})
    assert set(submitted(root)) == {"1000", "1001", "1002", "1099"}
    assert "refused as a whole" not in log
    assert "2 file(s) of canvas 1099" in log and "past the 1.0 MiB one student's files may take" in log


def test_recollect_with_force_sets_aside_a_student_an_earlier_collect_invented(tmp_path, caplog):
    """A Blackboard download first read as the kit's own layout invents student `Attention`; does a re-collect with
    --force (detected as Blackboard's now) move `submitted/Attention/` aside instead of leaving it to be graded?"""
    root = course(tmp_path / "course")
    receipt = lms_exports.blackboard_receipt("Attention", "Li Na", "li_na", ["attention.ipynb"])
    entries = {"Attention_li_na_attempt_2026-11-30-10-00-00_attention.ipynb": (lms_exports.NOTEBOOK, lms_exports.NOV30),
               "Attention_li_na_attempt_2026-11-30-10-00-00.txt": (receipt, lms_exports.NOV30)}
    zip_path = lms_exports.write_zip(tmp_path / "gradebook_LLM101_Attention_2026-12-01-08-00-00.zip", entries)
    zip_collect(root, zip_path, caplog, lms="student_id")
    assert set(submitted(root)) == {"Attention"}
    caplog.clear()
    log = zip_collect(root, root / "downloaded" / ASSIGNMENT / "archive" / zip_path.name, caplog, force=True)
    assert set(submitted(root)) == {"li_na"}
    assert "Set aside" in log
    assert (root / "downloaded" / ASSIGNMENT / "set_aside" / "Attention" / "attention.ipynb").is_file()


def moodle_reads_feedback_entry(name: str) -> tuple[str, str, str]:
    """(participant id, plugin, file name) as Moodle's feedback-zip import reads a path: split at the first four `_`
    of `/<path>`; the second part must be a number."""
    parts = f"/{name}".split("_", 4)
    assert len(parts) == 5 and parts[1].isdigit(), name
    return parts[1], f"{parts[2]}_{parts[3]}", parts[4].lstrip("/")


@pytest.mark.parametrize("lms", ["moodle", "canvas"])
def test_feedback_return_zip_uses_the_names_the_lms_bulk_upload_expects(tmp_path, caplog, lms):
    """After collecting an LMS download and generating feedback, does the feedback zip hold one page per student,
    named so that the LMS's bulk upload attaches it to that same student (Moodle's participant id, Canvas's user id)?"""
    from grader.nbgrader import lms_feedback

    root = course(tmp_path / "course")
    if lms == "moodle":
        zip_path, expected, _ = lms_exports.moodle_zip(tmp_path)
        roster = lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
        zip_collect(root, zip_path, caplog, lms="moodle", roster=str(roster))
        lms_id = {row[3]: row[0].split()[-1] for row in lms_exports.MOODLE_WORKSHEET[1:]}  # ID number -> participant
    else:
        zip_path, expected, *_ = lms_exports.canvas_zip(tmp_path)
        zip_collect(root, zip_path, caplog)
        lms_id = {sid: sid for sid in expected}
    for student in submitted(root):
        page = root / "feedback" / student / ASSIGNMENT / "attention.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>feedback for {student}</p>", encoding="utf-8")
    out = tmp_path / "feedback.zip"
    assert lms_feedback.main([ASSIGNMENT, "--lms", lms, "--course", str(root), "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as archive:
        entries = {name: archive.read(name).decode() for name in archive.namelist()}
    assert len(entries) == len(expected)
    for name, text in entries.items():
        student = text.removeprefix("<p>feedback for ").removesuffix("</p>")
        if lms == "moodle":
            participant, plugin, file_name = moodle_reads_feedback_entry(name)
            assert (participant, plugin, file_name) == (lms_id[student], "assignfeedback_file", "attention_feedback.html")
        else:  # Canvas reads the user id back from its own download's naming
            assert lms_exports.CANVAS_NAME.match(name)["user"] == lms_id[student], name


@pytest.fixture(scope="module")
def class_run_whole(tmp_path_factory):
    """One course through zip_collect, autograde and generate_feedback, for the tests that need nbgrader's whole run
    (three nbgrader processes, each importing nbgrader and torch): in its archive a correct notebook whose metadata
    nests 800 levels deep (nbformat's RecursionError) beside a correct plain one; in its source/ the unbuilt
    self-check file `grader build` would complete in release/."""
    import json

    from support.nbgrader_course import Course, correct_notebook

    course = Course.create(tmp_path_factory.mktemp("whole-run") / "course")
    unbuilt = course.root / "source" / ASSIGNMENT / "selfcheck.py"
    unbuilt.write_text("raise NameError(\"name 'module_allowed' is not defined\")\n", encoding="utf-8")
    honest = json.dumps(correct_notebook(course))
    deep = honest[:-1] + ', "deep": ' + '{"a": ' * 800 + "1" + "}" * 800 + "}"
    archive = course.root / "downloaded" / ASSIGNMENT / "archive"
    archive.mkdir(parents=True)
    (archive / "s1_attention.ipynb").write_text(deep, encoding="utf-8")
    (archive / "s2_attention.ipynb").write_text(honest, encoding="utf-8")
    collect = course.nbgrader("zip_collect", ASSIGNMENT)
    autograde = course.nbgrader("autograde", ASSIGNMENT, check=False)
    feedback = course.nbgrader("generate_feedback", ASSIGNMENT, check=False)
    return course, deep, collect, autograde, feedback


def test_a_notebook_nested_too_deep_for_nbformat_is_graded_and_autograde_exits_0(class_run_whole):
    """A correct notebook whose metadata nests 800 levels deep (nbformat's RecursionError) beside a correct plain one:
    does `nbgrader autograde` exit 0 with both graded in full, and a feedback page for each?"""
    course, deep, collect, autograde, feedback = class_run_whole
    assert "Cut down: 's1_attention.ipynb' nests deeper than 64 levels" in collect.output
    assert autograde.returncode == 0, autograde.output
    assert course.total("s1") == course.total("s2") == 20.0
    assert feedback.returncode == 0, feedback.output
    assert all((course.root / "feedback" / s / ASSIGNMENT / "attention.html").is_file() for s in ("s1", "s2"))
    archive = course.root / "downloaded" / ASSIGNMENT / "archive"
    assert (archive / "s1_attention.ipynb").read_text(encoding="utf-8") == deep


def test_autograded_and_feedback_folders_get_no_unbuilt_selfcheck_from_source(class_run_whole):
    """source/attention/ holds the unbuilt self-check files (`grader build` completes them in release/): after
    autograde and generate_feedback, are none of them in a student's autograded/ or feedback/ folder?"""
    course, _, _, autograde, feedback = class_run_whole
    assert autograde.returncode == 0 and feedback.returncode == 0, autograde.output + feedback.output
    assert (course.root / "source" / ASSIGNMENT / "selfcheck.py").is_file()
    for student in ("s1", "s2"):
        assert (course.root / "feedback" / student / ASSIGNMENT / "attention.html").is_file()
        for step in ("autograded", "feedback"):
            assert not (course.root / step / student / ASSIGNMENT / "selfcheck.py").exists(), (step, student)


def test_grades_back_to_blackboard_and_a_missing_column_refused_through_the_exporter(tmp_path):
    """Does `--LmsGradesExporter.lms=blackboard` write the Grade Centre upload into the assignment's own `|id` column,
    and does an export whose roster has no column for the assignment stop with the columns listed, writing nothing?"""
    root = course(tmp_path / "course")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        gradebook.add_student("li_na", last_name="Li", first_name="Na")
        gradebook.add_submission(ASSIGNMENT, "li_na")
    roster = lms_exports.write_csv(tmp_path / "gc.csv", [
        ["Last Name", "First Name", "Username", "Student ID", "Attention [Total Pts: 20 Score] |4401"],
        ["Li", "Na", "li_na", "", ""]])
    rows = list(csv.DictReader(io.StringIO(export(root, lms="blackboard", roster=str(roster)))))
    assert [(r["Username"], r["Attention [Total Pts: 20 Score] |4401"]) for r in rows] == [("li_na", "0")]
    (root / "out.csv").unlink()
    with pytest.raises(SystemExit, match=r"nothing written.*'Attention \[Total Pts: 20 Score\] \|4401'"):
        export(root, lms="blackboard", roster=str(roster), column="Quiz")
    assert not (root / "out.csv").exists()


def test_a_conflict_is_in_the_collect_log_and_its_record(tmp_path, caplog):
    """Two Moodle participants given one ID number by the worksheet: does zip_collect name the conflict, collect
    the newer file, and record the conflict for grade-all's class summary?"""
    import json

    from grader.nbgrader.earlier_collect import MANIFEST

    root = course(tmp_path / "course")
    worksheet = [row[:] for row in lms_exports.MOODLE_WORKSHEET]
    worksheet[4][3] = "2026001"
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", worksheet)
    zip_path = lms_exports.write_zip(tmp_path / "LLM-attention-88.zip", {
        "王 小明_1001_assignsubmission_file_/attention.ipynb": (lms_exports.notebook_of("wang"), lms_exports.NOV30),
        "Chen Jing_1004_assignsubmission_file_/attention.ipynb": (lms_exports.notebook_of("chen"), lms_exports.DEC1)})
    log = zip_collect(root, zip_path, caplog, lms="moodle", roster=str(roster))
    assert "Conflict: hand-ins of 2 different people (1001, 1004) map to student 2026001" in log
    assert set(submitted(root)) == {"2026001"}
    record = json.loads((root / "downloaded" / ASSIGNMENT / MANIFEST).read_text(encoding="utf-8"))
    assert "1001, 1004" in record["2026001"]["conflict"]


def test_a_clean_extraction_is_information_not_a_warning(tmp_path, caplog):
    """Nothing left out: the safe extractor's summary is INFO, so the warnings an instructor reads are only the
    ones that matter (a file left out, a conflict)."""
    root = course(tmp_path / "course")
    zip_path, expected, *_ = lms_exports.canvas_zip(tmp_path)
    zip_collect(root, zip_path, caplog, lms="canvas")
    assert set(submitted(root)) == set(expected)
    summary = [r for r in caplog.records if "Safe extractor:" in r.getMessage()]
    assert len(summary) == 1 and summary[0].levelno == logging.INFO, [r.getMessage() for r in summary]


def lms_roster(folder: Path, lms: str, maximum: str) -> tuple[Path, str]:
    """(the LMS's own roster of student 2026001 with the assignment's column worth `maximum`, the grade column's name)."""
    if lms == "moodle":
        header, *people = lms_exports.MOODLE_WORKSHEET
        return lms_exports.write_csv(folder / "worksheet.csv", [header, people[0][:6] + [maximum] + people[0][7:]]), "Grade"
    if lms == "canvas":
        return lms_exports.write_csv(folder / "canvas.csv", [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)"],
            ["    Points Possible", "", "", "", "", maximum],
            ["王, 小明", "1001", "2026001", "wxm", "LLM 101", ""]]), "Attention (2291)"
    header = f"Attention [Total Pts: {maximum} Score] |4401"
    return lms_exports.write_csv(folder / "gc.csv", [["Last Name", "First Name", "Username", "Student ID", header],
                                                     ["王", "小明", "wxm", "2026001", ""]]), header


@pytest.mark.parametrize("lms", ["moodle", "canvas", "blackboard"])
@pytest.mark.parametrize("maximum, written", [("100.00", "100"), ("20.00", "20")])
def test_a_full_marks_student_is_exported_as_the_lms_columns_maximum_and_the_log_says_how(tmp_path, caplog, lms,
                                                                                          maximum, written):
    """A 20/20 student and the LMS's own roster with the column worth 100 (Moodle's default) or 20: is the exported
    grade the column's maximum, with an INFO line naming both maxima and no WARNING?"""
    root = course(tmp_path / "course")
    scored(root, "2026001", 20.0)
    roster, column = lms_roster(tmp_path, lms, maximum)
    with caplog.at_level(logging.INFO):
        rows = list(csv.DictReader(io.StringIO(export(root, lms=lms, roster=str(roster)))))
    assert [row[column] for row in rows if row[column] != maximum] == [written]
    said = [r for r in caplog.records if r.getMessage().startswith("Grades: the LMS column is worth")]
    assert len(said) == 1 and said[0].levelno == logging.INFO and f"worth {written}" in said[0].getMessage()
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("lms", ["moodle", "canvas", "blackboard"])
def test_an_lms_column_worth_zero_is_refused_naming_both_maxima(tmp_path, lms):
    """The roster's column worth 0 (an LMS assignment left without points): is nothing written, the refusal naming the
    LMS's 0 and the assignment's 20?"""
    root = course(tmp_path / "course")
    scored(root, "2026001", 20.0)
    roster, _ = lms_roster(tmp_path, lms, "0")
    with pytest.raises(SystemExit, match=r"nothing written: the LMS column's maximum cannot be read.*'0'.*worth 20\b"):
        export(root, lms=lms, roster=str(roster))
    assert not (root / "out.csv").exists()


def test_a_moodle_download_named_with_an_underscore_is_the_class_not_one_student(tmp_path, caplog):
    """Moodle's download of a course whose short name holds `_` (`LLM_2026-Attention-88.zip`), collected with the
    worksheet and no `--LmsCollector.lms`: is every participant the roster knows collected under their own id, and no
    student `LLM` made up from the zip's name? Is Moodle's online text said at INFO, and someone the roster does not
    know as a WARNING?"""
    root = course(tmp_path / "course")
    zip_path, expected, _ = lms_exports.moodle_zip(tmp_path)
    named = zip_path.rename(zip_path.with_name("LLM_2026-Attention-88.zip"))
    roster = lms_exports.write_csv(tmp_path / "worksheet.csv", lms_exports.MOODLE_WORKSHEET)
    log = zip_collect(root, named, caplog, roster=str(roster), timezone="Asia/Shanghai")
    assert set(submitted(root)) == set(expected)
    assert "not student 'LLM''s own archive" in log and "the files are a moodle export" in log
    levels = {("onlinetext" in r.getMessage(), "Zhang San" in r.getMessage()): r.levelno for r in caplog.records
              if r.getMessage().startswith("Not collected:")}
    assert levels[(True, False)] == logging.INFO and levels[(False, True)] == logging.WARNING  # routine, a stranger


def test_a_blackboard_class_of_twenty_with_receipts_gives_no_warning(tmp_path, caplog):
    """Twenty Blackboard students, each attempt with the receipt Blackboard writes beside it, collected as lms.md's
    step 2 says (roster and zone named): is every student collected with no WARNING at all (nbgrader's own lines
    included), the receipts said at INFO and counted in the summary?"""
    root = course(tmp_path / "course")
    hw, attempt = "Attention", "2026-11-30-20-00-00"
    entries, roster = {}, [["Last Name", "First Name", "Username", "Student ID", "Attention [Total Pts: 20 Score] |4401"]]
    for n in range(20):
        user = f"user{n:02d}"
        entries[f"{hw}_{user}_attempt_{attempt}.txt"] = (
            lms_exports.blackboard_receipt(hw, f"Student{n} Li", user, ["attention.ipynb"]), lms_exports.NOV30)
        entries[f"{hw}_{user}_attempt_{attempt}_attention.ipynb"] = (lms_exports.NOTEBOOK, lms_exports.NOV30)
        roster.append(["Li", f"Student{n}", user, f"2026{n:03d}", ""])
    zip_path = lms_exports.write_zip(tmp_path / "gradebook_CS101_Attention_2026-12-03-10-00-00.zip", entries)
    zip_collect(root, zip_path, caplog, roster=str(lms_exports.write_csv(tmp_path / "gc.csv", roster)),
                timezone="Asia/Shanghai")
    assert set(submitted(root)) == {f"2026{n:03d}" for n in range(20)}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    (summary,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Colab collector:")]
    assert "20 student(s)" in summary and "0 file(s) left out" in summary and "20 routine file(s)" in summary
    receipts = [r for r in caplog.records if r.getMessage().startswith("Not collected:") and "receipt" in r.getMessage()]
    assert len(receipts) == 20 and {r.levelno for r in receipts} == {logging.INFO}


def test_the_rosters_names_reach_the_gradebook(tmp_path, caplog):
    """Collected with Canvas's export as the roster: does each student's gradebook entry carry the roster's last and
    first names (Canvas's sortable `Last, First`), so that `nbgrader export` has them?"""
    root = course(tmp_path / "course")
    roster = lms_exports.write_csv(tmp_path / "canvas.csv", [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Attention (2291)"],
        ["    Points Possible", "", "", "", "", "20.00"],
        ["Wang, Xiaoming", "1001", "2026001", "wxm", "LLM 101", ""],
        ["O'Brien, Mary Ann", "1003", "2026003", "mao", "LLM 101", ""]])
    zip_path = lms_exports.write_zip(tmp_path / "submissions.zip", {
        "wangxiaoming_1001_5001_attention.ipynb": (lms_exports.NOTEBOOK, lms_exports.NOV30),
        "obrienmaryann_1003_5003_attention (1).ipynb": (lms_exports.NOTEBOOK, lms_exports.NOV30)})
    zip_collect(root, zip_path, caplog, roster=str(roster))
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        names = {s.id: (s.last_name, s.first_name) for s in gradebook.students}
    assert names == {"2026001": ("Wang", "Xiaoming"), "2026003": ("O'Brien", "Mary Ann")}


def test_zip_collect_leaves_extracted_as_the_archive_made_it(tmp_path, caplog):
    """A class archive holding Colab's `s2026004_attention.ipynb 的副本` (no .ipynb suffix): after zip_collect, is every
    file the archive made still in extracted/ under its own name with its own bytes, nothing of the student's renamed,
    and the notebook collected all the same?"""
    root = course(tmp_path / "course")
    made = {"s2026004_attention.ipynb 的副本": lms_exports.notebook_of("s2026004"),
            "s2026001_Copy of attention.ipynb": lms_exports.notebook_of("s2026001")}
    zip_path = lms_exports.write_zip(tmp_path / "class.zip", {name: (text, lms_exports.NOV30) for name, text in made.items()})
    zip_collect(root, zip_path, caplog)
    extracted = root / "downloaded" / ASSIGNMENT / "extracted" / "class"
    students_files = {p.name: p.read_text(encoding="utf-8") for p in extracted.rglob("*")
                      if p.is_file() and ".kit-copies" not in p.relative_to(extracted.parent).parts}
    assert students_files == made
    assert set(submitted(root)) == {"s2026001", "s2026004"}
    collected = root / "submitted" / "s2026004" / ASSIGNMENT / "attention.ipynb"
    assert collected.read_text(encoding="utf-8") == made["s2026004_attention.ipynb 的副本"]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
