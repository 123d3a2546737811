"""Build configuration: the one place for paths, the Colab repository and the course's own words."""
from __future__ import annotations

from grader.process import ROOT  # noqa: F401 (the build's modules read it here, with the other paths)

ASSIGNMENT = "attention"
SOURCE_NOTEBOOK = f"source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
"""The first exercise's names, for the tests and benchmarks of the first lab; no verb reads them (the build, the demo,
nbgrader, grade-all and Gradescope take every exercise grader.exercises declares, or the one an assignment names)."""

COLAB_PLACEHOLDER_REPO = "attention-kit/attention-kit"
"""What COLAB_REPO says until an instructor sets it: `make build` warns loudly while they are equal."""
COLAB_REPO = COLAB_PLACEHOLDER_REPO
"""GitHub `owner/name` of the public repository that students open in Colab.

It must hold the published folders at the same paths as here (`release/attention/attention.ipynb`,
later `solutions/...`). Change it here, then run `make build`: every "Open in Colab" badge follows.
"""
COLAB_BRANCH = "main"
COLAB_PLACEHOLDER = "COLAB_URL"
"""What the source notebook's badge links to; the build replaces it with the generated file's Colab URL."""
ZIP_PLACEHOLDER = "REPOSITORY_ZIP_URL"
"""What the students' README links to for the download of COLAB_REPO as a zip (GitHub downloads no single folder)."""

COURSE_TEXT: dict[str, str] = {
    # the lab where the students met the causal mask: "因果掩码（causal mask，实验 07 里叫“遮罩”）"
    "COURSE_LAB": "实验 07",
    # the notes the students study, whose names (n_embd, n_head) the notebook maps to ModelArgs' (dim, n_heads)
    "COURSE_NOTES_ZH": "Happy-LLM 笔记",
    "COURSE_NOTES_EN": "the Happy-LLM notes",
}
"""What the students read about this course, in one place: each placeholder on the left, as written in
source/<assignment>/ (the notebook, selfcheck.py, README.md), becomes its value in every file the build writes
(grader/build/course_text.py). Another course sets its own words here, then runs `make build`
(docs/instructors/publishing.md, "What to change for another course")."""

EXPORT_TAG = "export"
"""Code cells with this cell tag form the plain Python modules (imports, ModelArgs, the graded definitions)."""

SELFCHECK_CELL = "selfcheck"
"""The provided code cell that holds the public self-check module inside the notebook."""
SELFCHECK_MODULE = "selfcheck.py"
"""The public self-check module in source/<assignment>/ (one of the exercise's `selfcheck_files`)."""
