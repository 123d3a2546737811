"""Step: remove the `### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS` blocks (nbgrader's own preprocessor)."""
from __future__ import annotations

from nbformat import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests


def clear_hidden_tests(nb: NotebookNode, path: str) -> NotebookNode:
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    return nb
