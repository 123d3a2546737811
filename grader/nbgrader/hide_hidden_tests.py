"""Feedback step: remove the `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` blocks before the page is rendered.

`nbgrader generate_feedback` renders the autograded notebook, in which OverwriteCells has put the
hidden tests back (nbgrader issue 917). Students see the verdicts and diagnoses in the test
cells' outputs, never the hidden code. Unlike nbgrader's ClearHiddenTests this never raises: a
student who typed the markers into a cell of their own gets a page too (the block is removed
there as well), and an unterminated block is removed to the end of its cell.
"""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool


BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"


def remove_hidden_blocks(source: str) -> str:
    """The text without its hidden blocks, marker lines included; an unterminated block runs to the end.
    Line for line what nbgrader's ClearHiddenTests leaves, so the test cells read as in the release."""
    if BEGIN not in source:
        return source
    kept, hidden = [], False
    for line in source.split("\n"):
        if BEGIN in line:
            hidden = True
        elif END in line and hidden:
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


class HideHiddenTests(Preprocessor):
    enabled = Bool(True, help="Remove hidden test blocks (on unless configured off).").tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        if BEGIN in cell.source:
            cell.source = remove_hidden_blocks(cell.source).rstrip("\n")
        return cell, resources
