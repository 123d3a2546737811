"""Student notebooks as they come back from Colab, made from the release notebook (the demo's class).

`answered` fills the release's solution cells; `answers_from_python` turns a `.py` submission
into those answers; `strip_nbgrader` and `colab_saved` do what a copy-paste and Colab do to a
notebook. All deterministic, so a demo run is the same every time. Everything about the
exercise's shape (which cells, which names, what is provided) comes from grader.exercises.attention.
The tests' own notebook edits (deleted, moved, split cells) are in tests/support/colab_notebooks.py.
"""
from __future__ import annotations

import ast
import copy
import hashlib
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.exercises import attention
from grader.handin import syntax_tree
from grader.build.config import ROOT, SOURCE_NOTEBOOK
from grader.build.read_write import read_notebook
from grader.build.strip_solution_markers import strip_solution_markers

PROVIDED_CLASS = syntax_tree.parse(attention.model_args_source()).body[0].name
"""`ModelArgs`: defined by a provided (locked) cell, so dropped from a .py's answers."""


def _bindings(node: ast.Import | ast.ImportFrom) -> set[tuple[str, str, str | None]]:
    """(module, name, alias) of each name an import binds: `import torch.nn as nn` is ("", "torch.nn", "nn")."""
    module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
    return {(module, alias.name, alias.asname) for alias in node.names}


PROVIDED_IMPORTS = set().union(*(_bindings(node) for node in syntax_tree.parse(attention.IMPORTS).body))
"""What the provided imports cell binds: a .py's own copy of these imports is left to that cell."""


def grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def reference_answers() -> dict[str, str]:
    """grade_id -> the source notebook's solution for that cell, markers removed."""
    answers = strip_solution_markers(read_notebook(ROOT / SOURCE_NOTEBOOK), SOURCE_NOTEBOOK)
    return {grade_id(c): c.source for c in answers.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def _is_provided(node: ast.stmt) -> bool:
    if isinstance(node, ast.ClassDef):
        return node.name == PROVIDED_CLASS
    return isinstance(node, (ast.Import, ast.ImportFrom)) and _bindings(node) <= PROVIDED_IMPORTS


def answers_from_python(path: Path) -> dict[str, str]:
    """Split a .py submission into the parts' solution cells: each part's cell starts at the definition of
    its graded name and holds what follows up to the next part's (the first part's cell also takes what
    comes before: its imports and helpers); the provided ModelArgs and imports are left to their own cells."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    starts = {part.graded_name: part.solution_cell for part in attention.PARTS}
    cells: dict[str, list[str]] = {part.solution_cell: [] for part in attention.PARTS}
    current = attention.PARTS[0].solution_cell
    for node in syntax_tree.parse(text).body:
        if _is_provided(node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in starts:
            current = starts[node.name]
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        cells[current].append("\n".join(lines[first - 1: node.end_lineno]))
    return {cell: "\n\n\n".join(chunks) + "\n" for cell, chunks in cells.items()}


def answered(release: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """The release notebook with the given solution cells (by grade_id) replaced by the answers."""
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def strip_nbgrader(nb: NotebookNode) -> NotebookNode:
    """Every cell without nbgrader's metadata (and the locks nbgrader sets), as after a copy-paste into a new notebook."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        for key in ("nbgrader", "deletable", "editable"):
            cell.metadata.pop(key, None)
    return nb


def _colab_id(seed: str, index: int) -> str:
    return hashlib.sha1(f"{seed}:{index}".encode()).hexdigest()[:12]


def colab_saved(nb: NotebookNode, seed: str = "colab") -> NotebookNode:
    """As Colab saves it: nbformat 4.0 (no cell ids; Colab keeps its own id in the cell metadata),
    `colab` metadata, execution counts and outputs, including a self-check that failed (the first part's)."""
    nb = copy.deepcopy(nb)
    nb.nbformat, nb.nbformat_minor = 4, 0
    nb.metadata = {
        "colab": {"provenance": [{"file_id": "1AbCdEf", "timestamp": 1732000000000}], "toc_visible": True},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
        "gpuClass": "standard",
    }
    count = 0
    for index, cell in enumerate(nb.cells):
        cell.pop("id", None)
        cell.metadata["id"] = _colab_id(seed, index)
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count
        cell.metadata["colab"] = {"base_uri": "https://localhost:8080/"}
        cell.metadata["outputId"] = _colab_id(seed + "-out", index)
        if grade_id(cell) == attention.PARTS[0].tests_cell:
            cell.outputs = [nbformat.v4.new_output(
                "error", ename="AssertionError", evalue="Causal leak", traceback=["AssertionError: Causal leak"])]
        else:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output of cell {index}\n")]
    return nb


def write(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
