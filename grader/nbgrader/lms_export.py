"""`nbgrader export --exporter=grader.nbgrader.lms_export.LmsGradesExporter`: grades back to Canvas or Moodle.

Reads each student's score (after nbgrader's late penalty) for one assignment from the gradebook and
writes the CSV the LMS's gradebook import takes (grader.lms.grade_sheets):
`--LmsGradesExporter.lms=canvas|moodle`, `--LmsGradesExporter.roster=CSV` (the same roster the collector
used: Canvas's gradebook export or Moodle's grading worksheet), `--LmsGradesExporter.column=…` (Canvas:
the assignment's column, default the assignment's name), `--to FILE` (default `<lms>_grades.csv`).
A student without a submission gets an empty grade; one the roster cannot place is named in a warning.
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from traitlets import Enum, Unicode

from grader.lms.grade_sheets import Grade, canvas_csv, moodle_csv
from grader.lms.roster import Roster


class LmsGradesExporter(ExportPlugin):
    """Write one assignment's grades as Canvas's or Moodle's gradebook import wants them."""

    lms = Enum(["canvas", "moodle"], "canvas", help="The LMS whose import layout to write.").tag(config=True)
    roster = Unicode("", help="The roster CSV (Canvas's gradebook export or Moodle's grading worksheet).").tag(config=True)
    column = Unicode("", help="Canvas: the assignment column's header (default: the assignment's name).").tag(config=True)

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
        if self.lms == "canvas":
            text, unplaced = canvas_csv(grades, self.column or assignment, roster)
        else:
            text, unplaced = moodle_csv(grades, roster)
        destination = Path(self.to or f"{self.lms}_grades.csv")
        destination.write_text(text, encoding="utf-8")
        for student in unplaced:
            self.log.warning("Not exported: student %r is not in the roster %s", student, self.roster)
        self.log.info("Wrote %d grade(s) for %s to %s", len(grades) - len(unplaced), assignment, destination)
