"""The kit's side of nbgrader: its plugins, configured in the course's nbgrader_config.py, and the course
driver `grade-all --nbgrader` uses.

One transformation per module, like nbgrader's own preprocessors:

| module | class | where in nbgrader | what it does |
| --- | --- | --- | --- |
| `sandbox_check` | `refuse_without_sandbox` | `Autograde.pre_convert_hook`, before each submission is recorded | where the sandbox cannot start, ends autograde in one line before the first student |
| `discard_kit_metadata` | `DiscardKitMetadata` | `Autograde.sanitize_preprocessors`, the kit's first step | drops every `attention_kit` metadata entry the student's notebook carries, so the kit's notes are only its own |
| `restore_cell_metadata` | `RestoreCellMetadata` | `Autograde.sanitize_preprocessors`, before `OverwriteCells` | matches submitted cells to the release notebook by what they define; restores their nbgrader metadata |
| `restore_missing_cells` | `RestoreMissingCells` | same, right after | puts back locked release cells (provided code, tests) the notebook lacks |
| `grade_with_hidden_graders` | `GradeWithHiddenGraders` | `Autograde.autograde_preprocessors`, in place of `Execute` | grades the code cells in the sandbox; writes verdicts, pictures and scores into the test cells |
| `hide_hidden_tests` | `HideHiddenTests` | `GenerateFeedback.preprocessors` | removes the hidden test blocks from feedback pages |
| `plain_math` | `PlainMath` | `GenerateFeedback.preprocessors`, before `SanitizeFeedback` | rewrites the LaTeX in markdown cells as text with `<sub>`/`<sup>` (the page runs no MathJax) |
| `sanitize_feedback` | `SanitizeFeedback` | `GenerateFeedback.preprocessors`, last | cleans markdown, raw cells, outputs and metadata (nh3) so nothing a student wrote is live markup |
| `feedback_page_policy` | `FeedbackPageExporter` | `GenerateFeedback.exporter_class` | nbgrader's HTML page plus a Content-Security-Policy (no script, nothing loaded) and text outputs wrapped by the browser |
| `safe_extractor` | `SafeExtractor` | `ZipCollectApp.extractor_plugin` | extracts hand-in archives with sizes, ratios, paths, links and student ownership checked; names every refusal |
| `collector` | `ColabFileNameCollector` | base of `LmsCollector` | maps Colab downloads `<student_id>_<any name>.ipynb` to the assignment's notebook |
| `lms_collector` | `LmsCollector` | `ZipCollectApp.collector_plugin` | Canvas, Moodle, Blackboard or `<student_id>_…` downloads (grader.lms): student ids through a roster, the LMS's times and late marks into timestamp.txt |
| `lms_export` | `LmsGradesExporter` | `nbgrader export --exporter=…` | one assignment's grades as Canvas's, Moodle's or Blackboard's gradebook import CSV, into the assignment's own column |

`course` (the course driver of `grade-all --nbgrader`: nbgrader's sanitize pass and the kit's grading step
in this process, through nbgrader's public API) and `autograde_run` (its one `nbgrader autograde` child and
that child's log) serve `grade-all`, not nbgrader.

`lms_feedback` (`python -m grader.nbgrader.lms_feedback`: the feedback pages zipped as Moodle's and Canvas's
bulk uploads name them) reads what `earlier_collect` records of each zip_collect (whom it collected, from which
file; the submitted/ folders an earlier collect made and this one does not are set aside with `--force`).

`release_cells` (what the release notebook's cells are, what a cell defines), `bounded_depth` (a notebook cut
to a depth nbgrader can read, for the collector),
`attention_figure` (the attention-matrix picture) and `archive_members` (an archive's members,
sizes bounded while reading) are helpers.
"""
