"""Step: put the public self-check module (source/<assignment>/selfcheck.py) into the notebook's provided cell `selfcheck`.

The same file is copied beside the released notebook for `python -m pytest`, so the notebook's
self-check cells and the pytest self-check run one source. Colab shows the cell folded (its
`# @title` line and `cellView: form`), since students only run it.
"""
from __future__ import annotations

from nbformat import NotebookNode

from grader.build.config import ROOT, SELFCHECK_CELL, SELFCHECK_MODULE
from grader.build.course_text import filled


RULES_START = "# --- the grading rules' allow-list: `make build` copies it here from grader/rules/table.py ---\n"
RULES_END = "# --- end of the grading rules' allow-list ---\n"


def rules_table() -> str:
    """grader/rules/table.py without its docstring: the one table the worker enforces, for the self-check."""
    text = (ROOT / "grader" / "rules" / "table.py").read_text(encoding="utf-8")
    return text[text.index('"""', 3) + 3:].lstrip("\n")


def selfcheck_source(assignment: str) -> str:
    """source/<assignment>/selfcheck.py with the grading rules' table put between its markers and the course's
    own words in place of their placeholders."""
    text = filled((ROOT / "source" / assignment / SELFCHECK_MODULE).read_text(encoding="utf-8"))
    start, end = text.index(RULES_START) + len(RULES_START), text.index(RULES_END)
    return (text[:start] + rules_table() + text[end:]).rstrip("\n")


def inline_selfcheck(nb: NotebookNode, path: str) -> NotebookNode:
    """`path` is the source notebook's, source/<assignment>/<assignment>.ipynb: its folder's self-check goes in."""
    cells = [cell for cell in nb.cells if cell.get("id") == SELFCHECK_CELL]
    if len(cells) != 1:
        raise ValueError(f"{path}: expected one code cell with id {SELFCHECK_CELL!r} for the self-check module")
    cells[0].source = selfcheck_source(path.split("/")[-2])
    cells[0].metadata["cellView"] = "form"
    return nb
