"""The course driver of `grade-all --nbgrader`: an nbgrader course seen through its own configuration,
exactly as `nbgrader autograde` sees it, used read-only.

nbgrader's sanitize pass, then the course's autograde steps up to the kit's grading step
(GradeWithHiddenGraders), run in this process on each notebook, so the report cache gets exactly
the entries that step will look up when the one `nbgrader autograde` child runs
(grader.nbgrader.autograde_run). Only nbgrader's public API is used (its apps, converters,
CourseDirectory, Gradebook); the one thing it has no public way to say is isolated in
`autograde_converter`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.api import MissingEntry
from nbgrader.apps.autogradeapp import AutogradeApp
from nbgrader.converters import Autograde
from nbgrader.converters.base import NbGraderException
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

from grader.errors import CourseError
from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders
from grader.nbgrader.release_cells import kit_metadata
from grader.process import ROOT, open_gradebook

REPORT_CACHE_FOLDER = ".attention-kit-report-cache"
"""The report cache of `--nbgrader`, inside the course's autograded/ folder (git-ignored; a dot-name,
so nbgrader never takes it for a student)."""


def kit_config():
    """The kit's nbgrader_config.py (at the repo root), read as `nbgrader` reads it when run from there,
    without changing this process's working directory."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()


def autograde_converter(app: AutogradeApp) -> Autograde:
    """nbgrader's Autograde converter, set up as `nbgrader autograde` sets it up (its `start`) without
    converting anything. Its exporter runs the course's sanitize pass only: nbgrader switches passes with
    the private `_sanitizing` / `_init_preprocessors`; the public equivalent is an exporter built without
    its default preprocessors and given the course's `sanitize_preprocessors`, as nbgrader registers them."""
    converter = Autograde(coursedir=app.coursedir, parent=app)
    converter.exporter = converter.exporter_class(parent=converter, config=converter.config,
                                                  default_preprocessors=[], preprocessors=[])
    for step in converter.sanitize_preprocessors:
        converter.exporter.register_preprocessor(step)
    return converter


@dataclass
class Course:
    """One assignment of an nbgrader course, set up for the sanitize pass and the grading steps."""

    root: Path
    assignment: str
    overrides: list[str]  # nbgrader command-line options both passes get (never a secret: see DB_URL_ENV)
    converter: Autograde  # set up for the sanitize pass
    grading_steps: list  # autograde_preprocessors up to the grading step, instantiated
    db_url: str | None = None  # the gradebook, when not the course's configured one

    @classmethod
    def open(cls, root: Path, assignment: str, db_url: str | None) -> "Course":
        overrides = [f"--CourseDirectory.root={root}"]
        app = AutogradeApp(config=kit_config())
        app.load_cwd_config = False  # the kit's configuration only, whatever folder the instructor is in
        # in this process, an argument list is no command line: the URL may go here
        app.initialize([assignment, *overrides, *([f"--CourseDirectory.db_url={db_url}"] if db_url else []),
                        "--log-level=ERROR"])  # the nbgrader run logs what matters
        app.coursedir.assignment_id = assignment
        converter = autograde_converter(app)
        steps = []
        for step in converter.autograde_preprocessors:
            step = import_item(step) if isinstance(step, str) else step
            steps.append(step(parent=converter))
            if issubclass(step, GradeWithHiddenGraders):
                break
        else:
            raise CourseError("the course's Autograde.autograde_preprocessors have no GradeWithHiddenGraders step "
                              "(nbgrader_config.py), so nbgrader would not use the hidden graders' verdicts")
        return cls(root, assignment, overrides, converter, steps, db_url)

    def keep_verdicts_in(self, folder: Path) -> None:
        """Both passes keep and find verdicts in the report cache `folder`: the grading step here, and the
        `nbgrader autograde` child's (an option of its command line, a path, never a secret)."""
        for step in self.grading_steps:
            if isinstance(step, GradeWithHiddenGraders):
                step.report_cache = str(folder)
        self.overrides.append(f"--GradeWithHiddenGraders.report_cache={folder}")

    def credit_fixes(self, fraction: float) -> None:
        """Both passes award `fraction` of what a verified fix earns (grader.fixes), in place of the course's
        GradeWithHiddenGraders.fix_credit: the grading step here and the `nbgrader autograde` child's."""
        for step in self.grading_steps:
            if isinstance(step, GradeWithHiddenGraders):
                step.fix_credit = fraction
        self.overrides.append(f"--GradeWithHiddenGraders.fix_credit={fraction}")

    @property
    def coursedir(self):
        return self.converter.coursedir

    @property
    def autograded(self) -> Path:
        """The course's autograded/ folder."""
        return Path(self.coursedir.format_path(self.coursedir.autograded_directory, ".", ".")).resolve()

    def gradebook(self):
        return open_gradebook(self.coursedir.db_url, self.coursedir.course_id)

    def notebooks(self) -> list[tuple[str, Path]]:
        """(student, notebook) for each submitted notebook nbgrader would grade (known to the gradebook)."""
        database = self.coursedir.db_url.removeprefix("sqlite:///")
        if self.coursedir.db_url.startswith("sqlite:///") and not Path(database).is_file():
            # opening it would create an empty gradebook.db in a folder that is no course
            raise CourseError(f"{self.root} is not a recorded nbgrader course: it has no {Path(database).name} "
                              "(run grade-all --nbgrader on the repository root, after `make build`)")
        with self.gradebook() as gb:
            try:
                known = {notebook.name for notebook in gb.find_assignment(self.assignment).notebooks}
            except MissingEntry:
                raise CourseError(f"the gradebook ({self.coursedir.db_url}) has no assignment {self.assignment!r}: "
                                  "record it first (`make build`, or nbgrader generate_assignment with this "
                                  "db_url, see docs/instructors/big-class.md)") from None
        try:
            self.converter.init_notebooks()
        except NbGraderException:
            return []
        found = []
        for folder, paths in sorted(self.converter.assignments.items()):
            student = Path(folder).parent.name
            found += [(student, Path(p)) for p in sorted(paths) if Path(p).stem in known]
        return found

    def sanitized(self, path: Path) -> tuple[object, dict]:
        """nbgrader's sanitize pass (the course's sanitize_preprocessors: the kit's Colab repairs,
        OverwriteCells, ...) on one submitted notebook, in memory: what autograde's second pass reads."""
        output, _ = self.converter.exporter.from_filename(
            str(path), resources=self.converter.init_single_notebook_resources(str(path)))
        return nbformat.reads(output, as_version=4), self.converter.init_single_notebook_resources(str(path))

    def graded(self, nb, resources: dict) -> dict:
        """The second pass up to the grading step; the step grades through grader.grade.grade (so the
        verdict lands in the report cache) and keeps the report in the notebook's metadata."""
        for step in self.grading_steps:
            nb, resources = step(nb, resources)
        report = kit_metadata(nb).get("report")
        if not isinstance(report, dict):
            raise CourseError("the grading step left no report in the notebook's metadata (attention_kit.report)")
        return report

    def would_autograde(self, student: str) -> bool:
        """nbgrader's own rule (BaseConverter.init_destination), read-only: not yet autograded, --force,
        or a newer submission."""
        if self.converter.force:
            return True
        dest = Path(self.coursedir.format_path(self.coursedir.autograded_directory, student, self.assignment))
        if not dest.exists():
            return True
        source = self.coursedir.format_path(self.coursedir.submitted_directory, student, self.assignment)
        new = self.coursedir.get_existing_timestamp(source)
        old = self.coursedir.get_existing_timestamp(str(dest))
        return bool(new and old and new > old)

    def scores(self, students: list[str]) -> dict[str, tuple[float, float] | None]:
        """student -> (score, max score) in the gradebook, None when it has no submission of theirs."""
        found: dict[str, tuple[float, float] | None] = {}
        with self.gradebook() as gb:
            for student in students:
                try:
                    submission = gb.find_submission(self.assignment, student)
                    found[student] = (float(submission.score), float(submission.max_score))
                except MissingEntry:
                    found[student] = None
        return found
