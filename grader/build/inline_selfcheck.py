"""Step: put the public self-check module (source/<assignment>/selfcheck.py) into the notebook's provided cell `selfcheck`.

The same file is copied beside the released notebook for `python -m pytest`, so the notebook's
self-check cells and the pytest self-check run one source. What every exercise's self-check does alike (how a
check fails, the grading rules read in the code, running a part and reporting it) is one source too, the files of
source/selfcheck/, each put between its markers in the module. Colab
shows the cell folded (its `# @title` line and `cellView: form`), since students only run it.
"""
from __future__ import annotations

from nbformat import NotebookNode

from grader.build.config import ROOT, SELFCHECK_CELL, SELFCHECK_MODULE
from grader.build.course_text import filled


RULES_START = "# --- the grading rules' allow-list: `make build` copies it here from grader/rules/table.py ---\n"
RULES_END = "# --- end of the grading rules' allow-list ---\n"
RUNNER = "source/selfcheck/runner.py"
RUNNER_START = f"# --- the self-check's runner and report: `make build` copies it here from {RUNNER} ---\n"
RUNNER_END = "# --- end of the self-check's runner and report ---\n"
SHARED_PIECES = (  # (file, start marker, end marker): what every exercise's self-check does alike, one source each
    ("source/selfcheck/failures.py",
     "# --- how a check fails: `make build` copies it here from source/selfcheck/failures.py ---\n",
     "# --- end of how a check fails ---\n"),
    ("source/selfcheck/rules.py",
     "# --- the grading rules read in your code: `make build` copies it here from source/selfcheck/rules.py ---\n",
     "# --- end of the grading rules read in your code ---\n"),
    (RUNNER, RUNNER_START, RUNNER_END),
)


def rules_table() -> str:
    """grader/rules/table.py without its docstring: the one table the worker enforces, for the self-check."""
    text = (ROOT / "grader" / "rules" / "table.py").read_text(encoding="utf-8")
    return text[text.index('"""', 3) + 3:].lstrip("\n")


def between(text: str, start_marker: str, end_marker: str, inserted: str) -> str:
    """`text` with `inserted` in place of whatever its two marker lines enclose."""
    start, end = text.index(start_marker) + len(start_marker), text.index(end_marker)
    return text[:start] + inserted + text[end:]


def selfcheck_source(assignment: str) -> str:
    """source/<assignment>/selfcheck.py with the grading rules' table and what every exercise's self-check shares
    (source/selfcheck/: how a check fails, the rules read in the code, the runner) put between their markers, and
    the course's own words in place of their placeholders."""
    text = filled((ROOT / "source" / assignment / SELFCHECK_MODULE).read_text(encoding="utf-8"))
    text = between(text, RULES_START, RULES_END, rules_table())
    for shared, start, end in SHARED_PIECES:
        text = between(text, start, end, (ROOT / shared).read_text(encoding="utf-8"))
    return text.rstrip("\n")


def inline_selfcheck(nb: NotebookNode, path: str) -> NotebookNode:
    """`path` is the source notebook's, source/<assignment>/<assignment>.ipynb: its folder's self-check goes in."""
    cells = [cell for cell in nb.cells if cell.get("id") == SELFCHECK_CELL]
    if len(cells) != 1:
        raise ValueError(f"{path}: expected one code cell with id {SELFCHECK_CELL!r} for the self-check module")
    cells[0].source = selfcheck_source(path.split("/")[-2])
    cells[0].metadata["cellView"] = "form"
    return nb
