"""Writer: the code cells tagged `export` (imports, ModelArgs, graded definitions) as a plain module."""
from __future__ import annotations

from typing import Callable

from nbformat import NotebookNode

from grader.build.config import EXPORT_TAG


def exported_cells(nb: NotebookNode) -> list[str]:
    return [
        cell.source.strip("\n")
        for cell in nb.cells
        if cell.cell_type == "code" and EXPORT_TAG in cell.metadata.get("tags", [])
    ]


def python_module(docstring: str) -> Callable[[NotebookNode, str], bytes]:
    """A writer that puts `docstring` on top of the exported cells, two blank lines apart (PEP 8)."""

    def write(nb: NotebookNode, path: str) -> bytes:
        cells = exported_cells(nb)
        if not cells:
            raise ValueError(f"{path}: no code cell is tagged {EXPORT_TAG!r}")
        return ('"""' + docstring.strip("\n") + '\n"""\n' + "\n\n\n".join(cells) + "\n").encode("utf-8")

    return write
