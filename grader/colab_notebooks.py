"""Student notebooks in the states they come back from Colab, made from the release notebook (for the demo and tests).

`answered` fills the release's solution cells; `answers_from_python` turns a `.py` submission
(tests/submissions/...) into those answers; the other functions each do one thing a student or
Colab does to a notebook: save it in Colab's format, strip nbgrader's metadata, delete,
duplicate, move or split cells. All deterministic, so a demo run is the same every time.
"""
from __future__ import annotations

import ast
import copy
import hashlib
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.build.config import ROOT, SOURCE_NOTEBOOK
from grader.build.read_write import read_notebook
from grader.build.strip_solution_markers import strip_solution_markers

GRADED_CELLS = {"sdpa": "scaled_dot_product_attention", "mha": "MultiHeadAttention"}
"""Solution cell grade_id -> the name it defines."""
PROVIDED = {"ModelArgs"}  # defined by a provided (locked) cell, so dropped from a .py's answers


def grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def cell_by_id(nb: NotebookNode, wanted: str) -> int:
    return next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == wanted)


def reference_answers() -> dict[str, str]:
    """grade_id -> the source notebook's solution for that cell, markers removed."""
    answers = strip_solution_markers(read_notebook(ROOT / SOURCE_NOTEBOOK), SOURCE_NOTEBOOK)
    return {grade_id(c): c.source for c in answers.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def answers_from_python(path: Path) -> dict[str, str]:
    """Split a .py submission into the two solution cells: everything up to the SDPA function (its own
    imports and helpers included) into `sdpa`, the rest into `mha`; the provided ModelArgs and the
    provided imports are left to their own cells."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text)
    provided_imports = {"import math", "from dataclasses import dataclass", "import torch", "import torch.nn as nn",
                        "import torch.nn.functional as F"}
    cells: dict[str, list[str]] = {"sdpa": [], "mha": []}
    current = "sdpa"
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        chunk = "\n".join(lines[first - 1: node.end_lineno])
        if isinstance(node, ast.ClassDef) and node.name in PROVIDED:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and chunk.strip() in provided_imports:
            continue
        if isinstance(node, ast.ClassDef) and node.name == GRADED_CELLS["mha"]:
            current = "mha"
        cells[current].append(chunk)
    return {key: "\n\n\n".join(chunks) + "\n" for key, chunks in cells.items()}


def answered(release: NotebookNode, answers: dict[str, str]) -> NotebookNode:
    """The release notebook with the given solution cells (by grade_id) replaced by the answers."""
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def edit(nb: NotebookNode, cell: str, old: str, new: str) -> NotebookNode:
    """Replace text in one cell (by grade_id); the text must be there."""
    nb = copy.deepcopy(nb)
    target = nb.cells[cell_by_id(nb, cell)]
    if old not in target.source:
        raise ValueError(f"{old!r} is not in cell {cell}")
    target.source = target.source.replace(old, new)
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
    `colab` metadata, execution counts and outputs, including a self-check that failed."""
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
        if grade_id(cell) == "sdpa_tests":
            cell.outputs = [nbformat.v4.new_output(
                "error", ename="AssertionError", evalue="Causal leak", traceback=["AssertionError: Causal leak"])]
        else:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output of cell {index}\n")]
    return nb


def delete(nb: NotebookNode, *cells: str) -> NotebookNode:
    nb = copy.deepcopy(nb)
    nb.cells = [cell for cell in nb.cells if grade_id(cell) not in cells]
    return nb


def duplicate(nb: NotebookNode, cell: str) -> NotebookNode:
    """A copy of the cell right after it, metadata and all (Colab's "copy cell" + "paste")."""
    nb = copy.deepcopy(nb)
    index = cell_by_id(nb, cell)
    twin = copy.deepcopy(nb.cells[index])
    if "id" in twin:
        twin.id = twin.id + "-copy"
    nb.cells.insert(index + 1, twin)
    return nb


def move(nb: NotebookNode, cell: str, to: int) -> NotebookNode:
    """Move one cell (by grade_id) to another position."""
    nb = copy.deepcopy(nb)
    moved = nb.cells.pop(cell_by_id(nb, cell))
    nb.cells.insert(to, moved)
    return nb


def split(nb: NotebookNode, cell: str, at: str) -> NotebookNode:
    """Split a cell before the line that starts with `at` (Colab's "split cell"); both halves keep the metadata."""
    nb = copy.deepcopy(nb)
    index = cell_by_id(nb, cell)
    original = nb.cells[index]
    lines = original.source.split("\n")
    cut = next(i for i, line in enumerate(lines) if line.startswith(at))
    second = copy.deepcopy(original)
    original.source, second.source = "\n".join(lines[:cut]).rstrip() + "\n", "\n".join(lines[cut:])
    if "id" in second:
        second.id = second.id + "-split"
    nb.cells.insert(index + 1, second)
    return nb


def write(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
