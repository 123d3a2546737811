"""Sanitize step, the kit's first: discard every `attention_kit` metadata entry the submitted notebook carries.

The kit keeps its own notes under `attention_kit` (the repairs it made, the grader's report) and
prints them into the verdicts. A student can write that key too (Jupyter's metadata editor, or the
JSON by hand): left there, "repairs: corrected by the instructor: 10 / 10" would be printed as
the grader's own words. So whatever a submitted notebook holds there, at notebook or cell level,
is dropped before any kit step writes; afterwards the key holds only what this run wrote.
"""
from __future__ import annotations

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

from grader.nbgrader.release_cells import KIT_METADATA


class DiscardKitMetadata(NbGraderPreprocessor):
    """Remove `attention_kit` from the notebook's and every cell's metadata."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        found = KIT_METADATA in nb.get("metadata", {})
        nb.get("metadata", {}).pop(KIT_METADATA, None)
        for cell in nb.cells:
            found |= KIT_METADATA in cell.get("metadata", {})
            cell.get("metadata", {}).pop(KIT_METADATA, None)
        if found:
            self.log.warning("The submitted notebook carried %r metadata of its own: discarded", KIT_METADATA)
        return nb, resources
