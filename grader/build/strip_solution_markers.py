"""Step: keep the solutions but drop their `### BEGIN SOLUTION` / `### END SOLUTION` marker lines."""
from __future__ import annotations

from nbformat import NotebookNode

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def strip_solution_markers(nb: NotebookNode, path: str) -> NotebookNode:
    for cell in nb.cells:
        if cell.cell_type == "code":
            lines = cell.source.split("\n")
            cell.source = "\n".join(line for line in lines if line.strip() not in MARKERS)
    return nb
