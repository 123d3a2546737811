"""Does a feedback page's header name each graded test cell by its part, not "Test cell" twice?"""
from __future__ import annotations

import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.converters import generate_feedback
from traitlets.config import Config

from grader.exercises.attention import PARTS
from grader.nbgrader.feedback_page_policy import FeedbackPageExporter

pytestmark = pytest.mark.unit

FORMGRADER = os.path.join(os.path.dirname(generate_feedback.__file__), "..", "server_extensions", "formgrader")


def test_the_header_lists_the_parts_by_name():
    """nbgrader's own feedback template, as generate_feedback configures it, through the kit's exporter."""
    nb = new_notebook()
    for part in PARTS:
        cell = new_code_cell("selfcheck_notebook()")
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": part.tests_cell,
                                     "points": part.points, "score": 3.0}
        nb.cells.append(cell)
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [os.path.abspath(os.path.join(FORMGRADER, "templates"))]
    config.HTMLExporter.extra_template_paths = [
        os.path.abspath(os.path.join(FORMGRADER, "static", "node_modules", "bootstrap", "dist", "css"))]
    resources = {"nbgrader": {"notebook": "attention", "score": 6.0, "max_score": 20.0, "late_penalty": 0.0}}
    page, _ = FeedbackPageExporter(config=config).from_notebook_node(nbformat.from_dict(nb), resources)
    assert ">Test cell<" not in page
    for part in PARTS:
        assert f'<a href="#{part.tests_cell}">{part.label}</a>' in page
