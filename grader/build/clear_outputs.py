"""Step: drop outputs and execution counts, so a notebook run before building changes nothing."""
from __future__ import annotations

from nbformat import NotebookNode


def clear_outputs(nb: NotebookNode, path: str) -> NotebookNode:
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return nb
