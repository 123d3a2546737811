"""Step: put the public self-check module (source/<assignment>/selfcheck.py) into the notebook's provided cell `selfcheck`.

The same file is copied beside the released notebook for `python -m pytest`, so the notebook's
self-check cells and the pytest self-check run one source. Colab shows the cell folded (its
`# @title` line and `cellView: form`), since students only run it.
"""
from __future__ import annotations

from nbformat import NotebookNode

from grader.build.config import ROOT, SELFCHECK_CELL, SELFCHECK_MODULE


def selfcheck_source() -> str:
    return (ROOT / SELFCHECK_MODULE).read_text(encoding="utf-8").rstrip("\n")


def inline_selfcheck(nb: NotebookNode, path: str) -> NotebookNode:
    cells = [cell for cell in nb.cells if cell.get("id") == SELFCHECK_CELL]
    if len(cells) != 1:
        raise ValueError(f"{path}: expected one code cell with id {SELFCHECK_CELL!r} for the self-check module")
    cells[0].source = selfcheck_source()
    cells[0].metadata["cellView"] = "form"
    return nb
