"""Student notebooks in every state they come back in, for the tests: the demo's Colab states
(grader.demo.class_notebooks, re-exported here) plus what a student does to cells by hand: edit,
delete, duplicate, move or split them. Cells are named by their nbgrader grade_id (grader.exercises.attention)."""
from __future__ import annotations

import copy

from nbformat import NotebookNode

from grader.demo import class_notebooks
from grader.demo.class_notebooks import (  # noqa: F401 (the tests' one factory)
    answered, answers_from_python, colab_saved, grade_id, strip_nbgrader, write)


def reference_answers(name: str = "attention") -> dict[str, str]:
    """The solution cells of an exercise's source notebook; the first lab's where a test names none."""
    return class_notebooks.reference_answers(name)


def cell_by_id(nb: NotebookNode, wanted: str) -> int:
    return next(i for i, cell in enumerate(nb.cells) if grade_id(cell) == wanted)


def edit(nb: NotebookNode, cell: str, old: str, new: str) -> NotebookNode:
    """Replace text in one cell (by grade_id); the text must be there."""
    nb = copy.deepcopy(nb)
    target = nb.cells[cell_by_id(nb, cell)]
    if old not in target.source:
        raise ValueError(f"{old!r} is not in cell {cell}")
    target.source = target.source.replace(old, new)
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
