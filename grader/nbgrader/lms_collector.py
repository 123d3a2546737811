"""`nbgrader zip_collect` plugin: the kit's collector for the bulk downloads of Canvas, Moodle and Blackboard.

`c.LmsCollector.lms` (or `--LmsCollector.lms=…`) says which export the extracted folder holds:
`canvas`, `moodle`, `blackboard`, `student_id` (the kit's `<student_id>_<any name>`), or `auto` (the
default): the layout most file names follow (grader.lms.names.detect), logged (INFO) with the count. Every
other rule is `ColabFileNameCollector`'s: a file that is not that layout's, not a notebook, a link or too
large is named with its reason; of two files for one student the newest is kept and the other named. The files
the LMS adds itself (Blackboard's receipts, Moodle's online text: grader.lms.names.routine) are named at INFO and
counted in the summary, so a WARNING is what needs a person.

- Student ids: with `c.LmsCollector.roster` (a CSV: Moodle's grading worksheet, Canvas's gradebook
  export, or any with a student id column; grader.lms.roster) the LMS's people become the course's
  student ids, by the LMS's own id, else by name; a hand-in the roster does not know is left out and
  named, in every layout (a `<student_id>_…` file whose id no row has, too). Without a roster the LMS's own id
  is the student id (Canvas user id, Moodle participant id, Blackboard username), which the grade export maps
  back as it is.
- Time and lateness, into nbgrader's `timestamp.txt` (so `AssignLatePenalties` applies the course's
  late policy against the assignment's due date): Blackboard's attempt time from the name; Moodle's
  file time in its zip (when the file was uploaded); Canvas gives only its `LATE` mark, recorded as
  one second after the gradebook's due date (on-time Canvas files get no timestamp: nbgrader counts them
  on time). Times the LMS writes without a zone are read in `c.LmsCollector.timezone`.
- Which of two files is newest: Blackboard's attempt time, Canvas's attachment id (ids grow with each
  upload), otherwise the file time.
- Names: with a roster, inside `zip_collect`, each collected student's last and first names (grader.lms.roster
  `names_of`) go into the course's gradebook (nbgrader's `update_or_create_student`), so `nbgrader export` and the
  feedback have them; a gradebook not made yet (no `generate_assignment` run) is not created, and the log says so.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from zoneinfo import ZoneInfo

from traitlets import Enum, Unicode

from grader.lms import blackboard, names
from grader.lms.roster import Roster

from .collector import KIT_COPIES, ColabFileNameCollector, Identity

CANVAS_BASIS = "Canvas's attachment id"
CANVAS_LATE_BY = timedelta(seconds=1)
"""How late a Canvas `LATE` file is recorded past the due date: Canvas's zip says late, not by how much."""


class LmsCollector(ColabFileNameCollector):
    """Collect Canvas, Moodle, Blackboard or `<student_id>_…` downloads, with their LMS times and late marks."""

    lms = Enum(["auto", *names.LAYOUTS], "auto", help="Which LMS export the extracted folder holds; auto: detect it "
                                                        "from the file names.").tag(config=True)
    roster = Unicode("", help="A CSV mapping the LMS's people to the course's student ids (Moodle's grading "
                              "worksheet, Canvas's gradebook export); empty: the LMS's own ids.").tag(config=True)
    timezone = Unicode("", help="The zone the LMS writes its times in (Moodle's file times in its zip, Blackboard's "
                                "attempt times), e.g. Asia/Shanghai; empty: UTC, said in the log.").tag(config=True)

    def __init__(self, **kwargs):
        self.layout = "student_id"
        self.extracted = Path(".")
        self.roster_table: Roster | None = None
        self.due: datetime | None = None
        self.due_known = False  # read from the gradebook at the first Canvas LATE file, not before
        self.read = names.reader("student_id", [])
        super().__init__(**kwargs)

    def archive_is_class_export(self, stem: str) -> bool:
        """An archive the extractor should treat as the whole class's, not one student's (grader.nbgrader.safe_extractor)."""
        return self.lms in ("canvas", "moodle", "blackboard") or names.is_lms_export_archive(stem)

    def make_plan(self, extracted: Path, released: list[str] | None) -> None:
        self.extracted = extracted
        self.roster_table = Roster.read(Path(self.roster)) if self.roster else None
        self.due_known = False
        self.layout = self.lms
        files = [PurePosixPath(Path(root, f).relative_to(extracted).as_posix())
                 for root, _, fs in os.walk(extracted) for f in fs
                 if KIT_COPIES not in Path(root).relative_to(extracted).parts] if extracted.is_dir() else []
        if self.lms == "auto":
            self.layout, why = names.detect(files, self.read_receipt)
            self.log.info("LMS collector: the files are a %s export (%s)", self.layout, why)
        self.read = names.reader(self.layout, files, self.read_receipt)
        if self.layout in ("moodle", "blackboard"):  # a zone assumed, not named, needs the instructor's look
            (self.log.info if self.timezone else self.log.warning)(
                "LMS collector: %s's times are read in %s%s", self.layout, self.zone,
                "" if self.timezone else " (no --LmsCollector.timezone given; name the zone the LMS site shows its "
                                         "times in, e.g. Asia/Shanghai)")
        super().make_plan(extracted, released)
        if self.roster_table is not None and self.is_zip_collect(self.parent):
            self.record_names(sorted({c.student_id for c in self.plan.values()}))
        late = sorted(c.student_id for c in self.plan.values() if c.identity and c.identity.late)
        if late:
            self.log.warning("Canvas marks %d student(s) LATE: %s; %s", len(late), ", ".join(late),
                             f"timestamp.txt records them {CANVAS_LATE_BY.seconds} s after the due date {self.due}"
                             if self.due else "the gradebook has no due date, so no late penalty can apply "
                                              "(nbgrader db assignment add ASSIGNMENT --duedate=...)")

    def layout_name(self) -> str:
        return self.layout

    def is_routine(self, path: Path) -> bool:
        return path.is_relative_to(self.extracted) and names.routine(
            self.layout, PurePosixPath(path.relative_to(self.extracted).as_posix()))

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone or "UTC")

    def read_receipt(self, relative: PurePosixPath) -> str:
        """A Blackboard receipt's text, its first RECEIPT_BYTES only, never through a link."""
        try:
            with open(os.open(self.extracted / relative, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
                return handle.read(blackboard.RECEIPT_BYTES).decode("utf-8-sig", errors="replace")
        except OSError:
            return ""

    def identify(self, path: Path) -> Identity | str:
        relative = PurePosixPath(path.relative_to(self.extracted).as_posix()) if path.is_relative_to(self.extracted) \
            else PurePosixPath(path.name)
        hand_in = self.read(relative)
        if isinstance(hand_in, str):
            detected = self.lms == "auto" and self.layout != "student_id"
            return hand_in + (f" (this folder was read as a {self.layout} export)" if detected else "")
        student = hand_in.who
        if self.roster_table is not None and self.layout == "student_id":
            if student not in self.roster_table.by_student:  # the name gives the course's id: the roster must know it
                return f"not in the roster: no student id {student!r}"
        elif self.roster_table is not None:
            student, why = self.roster_table.student_for(hand_in)
            if student is None:
                return why
        return Identity(student, hand_in.file_name, *self.time_and_rank(hand_in, path), late=hand_in.late,
                        submitter=hand_in.who)

    def time_and_rank(self, hand_in: names.HandIn, path: Path) -> tuple[datetime | None, tuple, str]:
        if hand_in.layout == "blackboard":
            stamp = hand_in.time.replace(tzinfo=self.zone)
            return stamp, (stamp.timestamp(),), "Blackboard's attempt time"
        if hand_in.layout == "canvas":
            if hand_in.late and not self.due_known:
                self.due, self.due_known = self.due_date(), True
            stamp = self.due + CANVAS_LATE_BY if hand_in.late and self.due else None
            return stamp, (hand_in.order,), CANVAS_BASIS
        if hand_in.layout == "moodle":
            # the zip holds Moodle's wall-clock time, which the extractor (as unzip) set as this machine's local time
            stamp = datetime.fromtimestamp(path.stat().st_mtime).replace(tzinfo=self.zone)
            return stamp, (stamp.timestamp(),), "the file's time in Moodle's zip"
        return None, (), Identity("", "").basis

    def gradebook_url(self) -> str | None:
        """The course's gradebook, if the collector runs inside zip_collect and the gradebook exists (a missing SQLite
        file is not created)."""
        app = self.parent
        if not self.is_zip_collect(app):
            return None
        url = app.coursedir.db_url
        if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
            return None
        return url

    def record_names(self, students: list[str]) -> None:
        """The roster's names of the collected students, into the gradebook."""
        url = self.gradebook_url()
        if url is None:
            self.log.info("LMS collector: no gradebook yet, so the roster's names are not recorded (run "
                          "generate_assignment first, then collect again)")
            return
        from nbgrader.api import Gradebook

        with Gradebook(url, self.parent.coursedir.course_id) as gradebook:
            for student in students:
                last, first = self.roster_table.names_of(student)
                gradebook.update_or_create_student(student, **{key: value for key, value in
                                                               (("last_name", last), ("first_name", first)) if value})
        self.log.info("LMS collector: the roster's names of %d student(s) recorded in the gradebook", len(students))

    def due_date(self) -> datetime | None:
        """The assignment's due date in the gradebook (aware, UTC), if the collector runs inside zip_collect and
        the course has a gradebook."""
        url = self.gradebook_url()
        if url is None:
            return None
        from nbgrader.api import Gradebook, MissingEntry

        app = self.parent
        try:
            with Gradebook(url, app.coursedir.course_id) as gradebook:
                due = gradebook.find_assignment(app.coursedir.assignment_id).duedate
        except MissingEntry:
            return None
        return due.replace(tzinfo=timezone.utc) if due else None  # nbgrader stores naive UTC

