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
from traitlets import Bool, Unicode


class HideHiddenTests(Preprocessor):
    enabled = Bool(True, help="Remove hidden test blocks (on unless configured off).").tag(config=True)
    begin = Unicode("BEGIN HIDDEN TESTS", help="The line marker that starts a hidden block.").tag(config=True)
    end = Unicode("END HIDDEN TESTS", help="The line marker that ends a hidden block.").tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int) -> tuple[NotebookNode, ResourcesDict]:
        if self.begin not in cell.source:
            return cell, resources
        kept, hidden = [], False
        for line in cell.source.split("\n"):
            if self.begin in line:
                hidden = True
            elif self.end in line and hidden:
                hidden = False
            elif not hidden:
                kept.append(line)
        cell.source = "\n".join(kept).rstrip("\n")
        return cell, resources
