"""nbgrader configuration: the repository root is the course directory.

Instructors run every nbgrader command from here, per assignment (`nbgrader zip_collect attention`,
`nbgrader autograde kv_cache`, `nbgrader generate_feedback attention`, ...). `make build`
records every exercise's assignment (`attention`, `kv_cache`: its graded cells and hidden tests) in `gradebook.db`
beside this file, as `nbgrader generate_assignment` does; `submitted/`, `autograded/`, `feedback/`,
`downloaded/` and `gradebook.db` are git-ignored. The kit's own steps are in
grader/nbgrader (one transformation per module); docs/instructors/grading.md explains them.
"""
import os
import warnings

from sqlalchemy.exc import SAWarning

from grader.process import put_nbgrader_tools_on_path

KIT = "grader.nbgrader"
NB = "nbgrader.preprocessors"
"""Classes are named by import path, so nbgrader commands that do not use them (generate_assignment in
`make build`) never import them, nor torch."""

CELL_TIMEOUT_S = 300
"""Seconds one notebook cell may run when nbgrader executes a notebook in a kernel (`nbgrader
validate`, `generate_assignment` checks, an instructor's own runs). Sized for CUDA start-up: the
first CUDA call of a fresh kernel (context creation, kernel loading) can take a minute on a
cold GPU machine. Grading does not use it: `nbgrader autograde` runs no kernel, and the hidden
graders' sandbox has its own per-probe and per-submission limits (grader.sandbox.confinement.Limits)."""

c = get_config()  # noqa: F821  (injected by traitlets when nbgrader loads this file)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# nbgrader runs `alembic` through PATH to create or stamp a new gradebook: this Python's bin folder goes first, so
# `.venv/bin/nbgrader …` works as printed without .venv/bin on the instructor's PATH.
put_nbgrader_tools_on_path()
c.CourseDirectory.course_id = "attention-kit"
# A gradebook URL with a password comes through the environment, never a command line (which every
# user can read in /proc): `grade-all --nbgrader` hands it to its `nbgrader autograde` child this way,
# and an instructor may export it for any nbgrader command (docs/instructors/big-class.md).
if os.environ.get("ATTENTION_KIT_DB_URL"):  # grader.nbgrader.autograde_run.DB_URL_ENV
    c.CourseDirectory.db_url = os.environ["ATTENTION_KIT_DB_URL"]
# An instructor's report cache (grader.report.cache) for the grading step; `grade-all --nbgrader` gives its own
# on the command line instead.
if os.environ.get("ATTENTION_KIT_REPORT_CACHE"):  # grader.process.REPORT_CACHE_ENV
    c.GradeWithHiddenGraders.report_cache = os.environ["ATTENTION_KIT_REPORT_CACHE"]

# nbgrader 0.9.6's Gradebook.add_submission builds a submission's notebooks, grades and comments before it adds
# the submission to the session; under SQLAlchemy 2 each lazy load on the way autoflushes and warns that the
# still-pending objects "not in session" are not cascaded yet. They are added right after, so nothing is lost
# (the gradebook tests read every score back), but every student got three SAWarnings that drowned real
# warnings. Only that message, for those objects, is silenced.
warnings.filterwarnings(
    "ignore",
    message=r"Object of type <Submitted(Assignment|Notebook)> not in session, add operation along "
            r"'(Assignment|Student|Notebook)\.submissions' will not proceed",
    category=SAWarning,
)

# What replaces each `### BEGIN SOLUTION` ... `### END SOLUTION` region in the student notebook.
c.ClearSolutions.code_stub = {"python": "# 你的代码 / YOUR CODE HERE\nraise NotImplementedError()"}

# The one place for nbgrader's per-cell timeout (see CELL_TIMEOUT_S).
c.Execute.timeout = CELL_TIMEOUT_S
c.ExecutePreprocessor.timeout = CELL_TIMEOUT_S

# Autograde copies every other file of source/<assignment>/ over each student's folder as the "master version", and
# generate_feedback copies it on to feedback/. The self-check files in source/ are the unbuilt ones (`grader build`
# completes them in release/): run from autograded/ or feedback/ they would fail a correct student. None is copied.
_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "source")
c.Autograde.exclude_overwriting = {
    assignment: sorted(name for name in os.listdir(os.path.join(_SOURCE, assignment)) if not name.endswith(".ipynb"))
    for assignment in (os.listdir(_SOURCE) if os.path.isdir(_SOURCE) else [])
    if os.path.isdir(os.path.join(_SOURCE, assignment))}

# Before each submission, and so before the first: where the sandbox cannot start, autograde stops in one
# line with nothing recorded, instead of failing every student.
c.Autograde.pre_convert_hook = f"{KIT}.sandbox_check.refuse_without_sandbox"

# Autograde, first pass (sanitize): repair notebooks as they come back from Colab, then nbgrader's
# own steps. The repair runs before DeduplicateIds and OverwriteCells, which trust the metadata.
# What a student wrote into the kit's own metadata key is discarded first.
c.Autograde.sanitize_preprocessors = [
    f"{NB}.ClearOutput",
    f"{KIT}.discard_kit_metadata.DiscardKitMetadata",  # before any kit step writes its own notes there
    f"{KIT}.restore_cell_metadata.RestoreCellMetadata",
    f"{KIT}.restore_missing_cells.RestoreMissingCells",
    f"{NB}.DeduplicateIds",
    f"{NB}.OverwriteKernelspec",
    f"{KIT}.restore_hidden_tests.RestoreHiddenTests",  # no "checksum has changed" for untouched test cells
    f"{NB}.OverwriteCells",
    f"{NB}.CheckCellMetadata",
]
c.OverwriteCells.add_missing_cells = True

# Autograde, second pass: the hidden graders in place of Execute. Student code runs only in the
# graders' sandbox, never in a kernel; the verdicts become the test cells' outputs, which
# SaveAutoGrades turns into scores.
c.Autograde.autograde_preprocessors = [
    f"{KIT}.grade_with_hidden_graders.GradeWithHiddenGraders",
    f"{NB}.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    f"{NB}.LimitOutput",
    f"{NB}.SaveAutoGrades",
    f"{NB}.AssignLatePenalties",
    f"{NB}.CheckCellMetadata",
]
# Verified fixes (a mechanical fix of a catalog mistake, regraded in the sandbox) are always shown;
# this awards that fraction (0 to 1) of the points the fixed code earns, per part. 0: none.
c.GradeWithHiddenGraders.fix_credit = 0.0

# Feedback pages: the verdicts and diagnoses, never the hidden test code (nbgrader issue 917).
c.GenerateFeedback.preprocessors = [
    f"{NB}.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    f"{KIT}.hide_hidden_tests.HideHiddenTests",
    f"{KIT}.fold_selfcheck_cell.FoldSelfcheckCell",  # the provided self-check helpers as one line
    f"{KIT}.plain_math.PlainMath",  # the page runs no MathJax: LaTeX in the prose as plain text
    f"{KIT}.withhold_fix_code.WithholdFixCode",  # each verified fix's code only from WithholdFixCode.until on
    f"{KIT}.sanitize_feedback.SanitizeFeedback",  # last: nothing a student wrote is live markup in the page
]
# Resubmission after feedback: a day as "YYYY-MM-DD" (e.g. "2026-12-20") keeps each verified fix's code off the
# pages generated before it (the line and the points stay); empty: always shown.
c.WithholdFixCode.until = ""
# ... and every page forbids scripts and loading anything (a Content-Security-Policy in its head).
c.GenerateFeedback.exporter_class = f"{KIT}.feedback_page_policy.FeedbackPageExporter"

# zip_collect: an LMS's bulk download (Canvas, Moodle, Blackboard) or Colab downloads `<student_id>_<any name>.ipynb`
# in downloaded/<assignment>/extracted/ (docs/instructors/lms.md). The layout is detected from the names, or
# given: --LmsCollector.lms=canvas|moodle|blackboard|student_id; a roster CSV maps the LMS's people to student ids:
# --LmsCollector.roster=roster.csv.
c.ZipCollectApp.collector_plugin = f"{KIT}.lms_collector.LmsCollector"
# zip_collect, archives in downloaded/<assignment>/archive/: extracted with sizes, ratios, paths, links and
# student ownership checked, every refused entry named (grader/nbgrader/safe_extractor.py).
c.ZipCollectApp.extractor_plugin = f"{KIT}.safe_extractor.SafeExtractor"
