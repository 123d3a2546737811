"""Reading notebooks, and writing them byte for byte the same every time."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat import NotebookNode


def read_notebook(path: Path) -> NotebookNode:
    return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)


def notebook_bytes(nb: NotebookNode, path: str) -> bytes:
    """Serialize as Jupyter does (sorted keys, one-space indent, UTF-8, trailing newline)."""
    for cell in nb.cells:
        if "id" not in cell:
            raise ValueError(f"{path}: cell without an id; give every cell of the source notebook a stable id")
    return (nbformat.writes(nb, version=4) + "\n").encode("utf-8")
