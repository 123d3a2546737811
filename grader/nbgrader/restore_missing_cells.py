"""Sanitize step: put back the locked release cells (provided code, autograder tests) a notebook lacks.

Runs after `RestoreCellMetadata`, so a locked cell is missing exactly when no cell carries its
grade_id: the student deleted it, or turned it into a cell of their own. A fresh copy of the
release cell goes where the release has it: right after the cell holding the nearest earlier
nbgrader cell of the release (so `sdpa_tests` follows the cell that defines
`scaled_dot_product_attention`, wherever the student put it), else before the nearest later one.
OverwriteCells then fills in the hidden tests. Nothing of the student's is moved or removed.

nbgrader's own `OverwriteCells.add_missing_cells` (also on in nbgrader_config.py) only knows
grade cells and needs the previous release cell to be present; this step handles every locked
cell and every order, so nbgrader's finds nothing left to add.
"""
from __future__ import annotations

import uuid

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.nbgrader.release_cells import ReleaseCell, load_release, nbgrader_meta, note_repair


class RestoreMissingCells(NbGraderPreprocessor):
    """Insert a copy of every locked release cell that no submitted cell carries."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        release = load_release(self, resources).cells
        minor = int(nb.get("nbformat_minor", 0))
        for position, target in enumerate(release):
            if not target.is_locked or self.where(nb, target.grade_id) is not None:
                continue
            index = self.insertion_index(nb, release, position)
            cell = target.pristine(minor)
            if "id" in cell:
                taken = {c.get("id") for c in nb.cells}
                cell.id = target.cell.id if target.cell.id not in taken else uuid.uuid4().hex[:8]
            nb.cells.insert(index, cell)
            self.log.warning("Cell %r was missing: restored from the release notebook as cell %d", target.grade_id, index)
            note_repair(nb, f"缺少的单元格 {target.grade_id} 已从发布版 notebook 恢复（第 {index + 1} 个单元格）。",
                        f"The missing cell {target.grade_id} was restored from the release notebook (cell {index + 1}).")
        return nb, resources

    @staticmethod
    def where(nb: NotebookNode, grade_id: str) -> int | None:
        return next((i for i, cell in enumerate(nb.cells) if nbgrader_meta(cell).get("grade_id") == grade_id), None)

    def insertion_index(self, nb: NotebookNode, release: tuple[ReleaseCell, ...], position: int) -> int:
        for earlier in reversed(release[:position]):
            found = self.where(nb, earlier.grade_id)
            if found is not None:
                return found + 1
        for later in release[position + 1:]:
            found = self.where(nb, later.grade_id)
            if found is not None:
                return found
        return len(nb.cells)
