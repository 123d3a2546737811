"""Feedback step: show the provided self-check cell as one line, not its ~340 lines of helper code.

Colab folds that cell (`cellView: form`); a feedback page cannot, so without this step the page
opens with a wall of code the student never wrote. The cell is found by its nbgrader grade_id.
"""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

SELFCHECK_GRADE_ID = "selfcheck"
"""grader.build.config.SELFCHECK_CELL, repeated so that nbgrader's start-up imports nothing more."""


def folded(source: str) -> str:
    title = source.split("\n", 1)[0]
    lines = source.count("\n") + 1
    return f"{title}\n# （已提供的自检代码 {lines} 行，此处略去 / {lines} lines of provided self-check code, omitted here）"


class FoldSelfcheckCell(Preprocessor):
    """nbconvert's Preprocessor, as HideHiddenTests: nbgrader's base redeclares `display_data_priority` as a
    trait that is not configurable, so the HTML exporter's config for it drew a warning on every page."""

    enabled = Bool(True, help="Fold the self-check cell (on unless configured off: nbconvert's default is off).").tag(
        config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id") == SELFCHECK_GRADE_ID:
            cell.source = folded(cell.source)
        return cell, resources
