"""Sanitize step, just before OverwriteCells: give an untouched test cell its hidden blocks back.

The gradebook holds each test cell as the source notebook has it, hidden tests included; the
student's copy lacks them. OverwriteCells compares the two checksums, so it warned
"Attribute 'checksum' for cell sdpa_tests has changed!" for every student, the untouched stub
included, and real edits of a locked cell drowned in that noise. A test cell that reads exactly
as released (the gradebook's source with nbgrader's ClearHiddenTests applied) gets the gradebook's
source here; any other text is left for OverwriteCells to restore and report.
"""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell
from nbgrader import utils
from nbgrader.api import MissingEntry
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor

from grader.process import open_gradebook


def as_released(source: str) -> str:
    """What nbgrader's generate_assignment turns a source cell into: its hidden blocks removed."""
    cell, _ = ClearHiddenTests().preprocess_cell(new_code_cell(source, metadata={"nbgrader": {"grade": True}}), {}, 0)
    return cell.source


class RestoreHiddenTests(NbGraderPreprocessor):
    """Put the gradebook's source back into each locked cell whose text is exactly the released text."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        info = resources["nbgrader"]
        with open_gradebook(info["db_url"]) as gradebook:
            for cell in nb.cells:
                grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
                if cell.cell_type != "code" or not grade_id or not utils.is_locked(cell):
                    continue
                try:
                    source = gradebook.find_source_cell(grade_id, info["notebook"], info["assignment"]).source
                except MissingEntry:
                    continue
                if source != cell.source and as_released(source) == cell.source:
                    cell.source = source
        return nb, resources
