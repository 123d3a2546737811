"""Step: point the "Open in Colab" badge at the generated notebook itself."""
from __future__ import annotations

from nbformat import NotebookNode

from grader.build.config import COLAB_BRANCH, COLAB_PLACEHOLDER, COLAB_REPO


def colab_url(path: str) -> str:
    return f"https://colab.research.google.com/github/{COLAB_REPO}/blob/{COLAB_BRANCH}/{path}"


def colab_badge(nb: NotebookNode, path: str) -> NotebookNode:
    link = f"]({COLAB_PLACEHOLDER})"
    cells = [cell for cell in nb.cells if cell.cell_type == "markdown" and link in cell.source]
    if not cells:
        raise ValueError(f"{path}: no markdown cell links to ({COLAB_PLACEHOLDER}) for the Colab badge")
    for cell in cells:
        cell.source = cell.source.replace(link, f"]({colab_url(path)})")
    return nb
