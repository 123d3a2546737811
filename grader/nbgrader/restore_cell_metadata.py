"""Sanitize step: give each cell back the nbgrader metadata of the release cell it is, matched by what it defines.

Notebooks come back from Colab with nbgrader's cell metadata stripped, edited (a `grade` flag
flipped, points changed), duplicated onto copies of a cell, or attached to a cell that now holds
other code. nbgrader trusts that metadata (OverwriteCells restores locked cells by grade_id,
SaveAutoGrades scores the grade cells), so it is rebuilt here from the release notebook:

- a solution cell (`sdpa`, `mha`) is the code cell that defines its graded name; when several do,
  the last one, because that definition is the one that runs (and the one the grader grades);
- a locked cell (provided code, autograder tests) is the code cell that defines what the release
  cell defines (`ModelArgs`, the self-check helpers) or, for a cell that defines nothing (the imports), the
  one most like it; a cell qualifies only if it binds no name beyond the release cell's, because
  OverwriteCells will replace its text and student code must never be lost that way;
- every other cell loses its nbgrader metadata (it is the student's own cell).

Cells are never moved, merged or deleted; locked cells that found no match are put back by
`RestoreMissingCells`, which runs next.
"""
from __future__ import annotations

import copy

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float

from grader.nbgrader.release_cells import (
    ReleaseCell, load_release, nbgrader_meta, note_repair, read_cell, similarity,
)
from grader.handin.source import code_over_caps

# metadata keys nbgrader's release sets beside `nbgrader` (locked cells are not editable in Jupyter)
_LOCK_KEYS = ("deletable", "editable")
_SIGNIFICANT = ("grade_id", "grade", "solution", "locked", "task", "points")


def significant(meta: dict) -> dict:
    """The nbgrader metadata that decides how a cell is graded (not its checksum or schema version)."""
    return {key: meta[key] for key in _SIGNIFICANT if key in meta}


class RestoreCellMetadata(NbGraderPreprocessor):
    """Match submitted cells to the release notebook by their definitions and restore nbgrader metadata."""

    min_similarity = Float(
        0.5, help="How alike (0..1, by lines) a cell that defines nothing must be to a locked release cell to be it."
    ).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        release = load_release(self, resources)
        assigned = self.match(nb, release.cells)
        restored = []
        for index, cell in enumerate(nb.cells):
            old = nbgrader_meta(cell)
            target = assigned.get(index)
            if target is None:
                if "nbgrader" in cell.metadata:
                    self.log.warning("Cell %d: nbgrader metadata %r removed (the cell is the student's own)",
                                     index, old.get("grade_id", cell.metadata["nbgrader"]))
                    del cell.metadata["nbgrader"]
                    for key in _LOCK_KEYS:
                        cell.metadata.pop(key, None)
                continue
            new = copy.deepcopy(target.meta)
            if significant(old) != significant(new):
                self.log.debug("Cell %d restored as %r (its nbgrader metadata was %s)", index, target.grade_id,
                               significant(old) or "missing")
                restored.append(f"{target.grade_id} ({index + 1})")
            cell.metadata["nbgrader"] = new
            for key in _LOCK_KEYS:
                if key in target.cell.metadata:
                    cell.metadata[key] = target.cell.metadata[key]
                else:
                    cell.metadata.pop(key, None)
        if restored:  # what Colab does to every notebook: one line, not a warning per cell
            self.log.info("nbgrader metadata restored for %d cell(s), recognised by their content: %s", len(restored),
                          ", ".join(restored))
            note_repair(nb, f"按内容识别单元格并恢复了 nbgrader 元数据：{', '.join(restored)}。",
                        f"Cells recognised by their content, nbgrader metadata restored: {', '.join(restored)}.")
        return nb, resources

    def match(self, nb: NotebookNode, release: tuple[ReleaseCell, ...]) -> dict[int, ReleaseCell]:
        """Submitted cell index -> the release cell it is; solution cells first, so student code wins.
        Code over the grader's caps is not read at all (the grader refuses it unread): no cell is matched."""
        sources = {i: cell.source for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
        if code_over_caps(list(sources.values())) is not None:
            self.log.warning("The code cells are over the grader's size caps: not read, no cell matched")
            return {}
        code = {i: read_cell(text) for i, text in sources.items()}
        assigned: dict[int, ReleaseCell] = {}
        for target in (cell for cell in release if cell.is_solution):
            holders = [i for i, text in code.items() if i not in assigned and text.defined & target.text.defined]
            if holders:
                assigned[holders[-1]] = target
                if len(holders) > 1:
                    self.log.warning("%s is defined in cells %s; the last one is graded", target.grade_id, holders)
        for target in (cell for cell in release if cell.is_locked):
            candidates = [i for i in code if i not in assigned and self.looks_like(nb.cells[i], code[i], target)]
            safe = [i for i in candidates if code[i].parses and code[i].bound <= target.text.bound]
            for i in candidates:
                if i not in safe:
                    extra = sorted(code[i].bound - target.text.bound) or ["(does not parse)"]
                    self.log.warning("Cell %d looks like %r but holds the student's code (%s): kept as the "
                                     "student's cell", i, target.grade_id, ", ".join(extra))
            if safe:
                best = max(safe, key=lambda i: (similarity(nb.cells[i].source, target.cell.source), -i))
                assigned[best] = target
        return assigned

    def looks_like(self, cell: NotebookNode, text, target: ReleaseCell) -> bool:
        if target.text.defined:
            return bool(text.defined & target.text.defined)
        if nbgrader_meta(cell).get("grade_id") == target.grade_id:
            return True
        return not text.defined and similarity(cell.source, target.cell.source) >= self.min_similarity
