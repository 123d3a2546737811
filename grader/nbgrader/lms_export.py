"""`nbgrader export --exporter=grader.nbgrader.lms_export.LmsGradesExporter`: grades back to Canvas, Moodle or Blackboard.

Reads each student's score (after nbgrader's late penalty) for one assignment from the gradebook and
writes the CSV the LMS's gradebook import takes (grader.lms.grade_sheets):
`--LmsGradesExporter.lms=canvas|moodle|blackboard`, `--LmsGradesExporter.roster=CSV` (the same roster the
collector used: Canvas's gradebook export, Moodle's grading worksheet, Blackboard's Grade Centre download),
`--LmsGradesExporter.column=…` (Canvas, Blackboard: the assignment's column, default the assignment's name,
matched in the roster ignoring case and the LMS's id decoration), `--to FILE` (default `<lms>_grades.csv`).
A student without a submission gets an empty grade; one the roster cannot place is named in a warning. When the
roster has no column for the assignment, nothing is written and the roster's columns are listed. Grades are written
on the LMS column's scale (its maximum read from the roster, or Blackboard's header), said in the log; where that
maximum cannot be read, nothing is written and both maxima are named.
"""
from __future__ import annotations

import re
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Enum, Unicode

from grader.lms.grade_sheets import Grade, NoMaximum, NoSuchColumn, blackboard_csv, canvas_csv, moodle_csv
from grader.lms.roster import Roster

_CANVAS_HEADER = re.compile(r"\(\d+\)\s*$")


class LmsGradesExporter(ExportPlugin):
    """Write one assignment's grades as Canvas's or Moodle's gradebook import wants them."""

    lms = Enum(["canvas", "moodle", "blackboard"], "canvas", help="The LMS whose import layout to write.").tag(config=True)
    roster = Unicode("", help="The roster CSV (Canvas's gradebook export or Moodle's grading worksheet).").tag(config=True)
    column = Unicode("", help="Canvas, Blackboard: the assignment's column (default: the assignment's name, matched "
                              "in the roster ignoring case and the `(id)`/`|id` decoration).").tag(config=True)

    def grades(self, gradebook: Gradebook, assignment: str) -> list[Grade]:
        found = gradebook.find_assignment(assignment)
        grades = []
        for student in gradebook.students:
            if self.student and student.id not in self.student:
                continue
            try:
                submission = gradebook.find_submission(assignment, student.id)
            except MissingEntry:
                score = None
            else:  # as nbgrader's own CSV export: the late penalty off the raw score
                score = max(0.0, submission.score - (submission.late_submission_penalty or 0.0))
            name = ", ".join(part for part in (student.last_name, student.first_name) if part) or student.id
            grades.append(Grade(student.id, name, score, found.max_score))
        return grades

    def export(self, gradebook: Gradebook) -> None:
        assignments = [str(a) for a in self.assignment] or [a.name for a in gradebook.assignments]
        if len(assignments) != 1:
            raise ValueError(f"name one assignment (--assignment=NAME): an LMS import takes one column; "
                             f"the gradebook has {assignments}")
        assignment = assignments[0]
        roster = Roster.read(Path(self.roster)) if self.roster else None
        grades = self.grades(gradebook, assignment)
        try:
            if self.lms == "canvas":
                sheet = canvas_csv(grades, self.column or assignment, roster)
            elif self.lms == "blackboard":
                sheet = blackboard_csv(grades, self.column or assignment, roster)
            else:
                sheet = moodle_csv(grades, roster)
        except (NoSuchColumn, NoMaximum) as refusal:
            raise SystemExit(f"[LmsGradesExporter] nothing written: {refusal}") from None
        if self.lms == "canvas" and roster is None and not _CANVAS_HEADER.search(self.column or assignment):
            self.log.warning("Canvas imports a column without an `(id)` in its header as a NEW assignment: give "
                             "--LmsGradesExporter.roster=<Canvas's gradebook export> or the header, e.g. "
                             "--LmsGradesExporter.column='%s (1234)'", self.column or assignment)
        destination = Path(self.to or f"{self.lms}_grades.csv")
        destination.write_text(sheet.text, encoding="utf-8")
        for student in sheet.unplaced:
            self.log.warning("Not exported: student %r is not in the roster %s", student, self.roster)
        # a scale the LMS stated is routine; none stated (no roster) needs the instructor to check the column
        (self.log.info if sheet.scale.lms_maximum is not None else self.log.warning)("Grades: %s", sheet.scale.said())
        self.log.info("Wrote %d grade(s) for %s to %s", len(grades) - len(sheet.unplaced), assignment, destination)
