"""Student notebooks as they come back from Colab, made from an exercise's release notebook (the demo's classes).

`answered` fills the release's solution cells; `answers_from_python` turns a `.py` submission
into those answers; `strip_nbgrader` and `colab_saved` do what a copy-paste and Colab do to a
notebook. All deterministic, so a demo run is the same every time. Everything about an
exercise's shape (which cells, which names, what is provided) comes from its declaration in grader.exercises,
found by the hand-in's own code (grader.handin.exercise_of). The tests' own notebook edits (deleted, moved,
split cells) are in tests/support/colab_notebooks.py.
"""
from __future__ import annotations

import ast
import copy
import hashlib
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.exercises import Exercise, every_part, exercise
from grader.handin import syntax_tree
from grader.handin.exercise_of import exercise_of
from grader.build.config import ROOT
from grader.build.read_write import read_notebook
from grader.build.strip_solution_markers import strip_solution_markers

TESTS_CELLS = {part.tests_cell for part in every_part()}
"""The parts' autograder cells, of every exercise: Colab's outputs show a failed self-check in the first one."""


def _bindings(node: ast.Import | ast.ImportFrom) -> set[tuple[str, str, str | None]]:
    """(module, name, alias) of each name an import binds: `import torch.nn as nn` is ("", "torch.nn", "nn")."""
    module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
    return {(module, alias.name, alias.asname) for alias in node.names}


def _provided(declared: Exercise) -> tuple[set[str], set[tuple[str, str, str | None]]]:
    """What the exercise's provided cells define (`ModelArgs`, lab 1's causal attention in lab 2) and what their
    imports bind: a .py's own copy of these is left to those cells."""
    body = syntax_tree.parse("\n".join(declared.provided_code)).body
    definitions = {node.name for node in body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    imports = set().union(*(_bindings(node) for node in body if isinstance(node, (ast.Import, ast.ImportFrom))))
    return definitions, imports


def grade_id(cell: NotebookNode) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def reference_answers(name: str) -> dict[str, str]:
    """grade_id -> the exercise `name`'s source notebook's solution for that cell, markers removed."""
    notebook = exercise(name).source_notebook
    answers = strip_solution_markers(read_notebook(ROOT / notebook), notebook)
    return {grade_id(c): c.source for c in answers.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")}


def answers_from_python(path: Path) -> dict[str, str]:
    """Split a .py submission into its exercise's solution cells: each part's cell starts at the definition of
    its graded name and holds what follows up to the next part's (the first part's cell also takes what
    comes before: its imports and helpers); the provided definitions and imports are left to their own cells."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    declared = exercise_of(path, [text])
    definitions, imports = _provided(declared)
    starts = {part.graded_name: part.solution_cell for part in declared.parts}
    cells: dict[str, list[str]] = {part.solution_cell: [] for part in declared.parts}
    current = declared.parts[0].solution_cell
    for node in syntax_tree.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in definitions:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _bindings(node) <= imports:
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
    count, failed_shown = 0, False
    for index, cell in enumerate(nb.cells):
        cell.pop("id", None)
        cell.metadata["id"] = _colab_id(seed, index)
        if cell.cell_type != "code":
            continue
        count += 1
        cell.execution_count = count
        cell.metadata["colab"] = {"base_uri": "https://localhost:8080/"}
        cell.metadata["outputId"] = _colab_id(seed + "-out", index)
        if grade_id(cell) in TESTS_CELLS and not failed_shown:
            failed_shown = True
            cell.outputs = [nbformat.v4.new_output(
                "error", ename="AssertionError", evalue="Causal leak", traceback=["AssertionError: Causal leak"])]
        else:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output of cell {index}\n")]
    return nb


def write(nb: NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path
