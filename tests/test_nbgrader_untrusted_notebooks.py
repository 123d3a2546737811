"""Through nbgrader itself (autograde, then generate_feedback, once for this module): does a notebook holding
both `cells` and `worksheets` score what `grader grade` gives it, and does a student whose markdown holds an
SVG-only attachment and a `javascript:` link still get a feedback page with neither in it?
"""
from __future__ import annotations

import json
import re

import pytest
from nbformat import v4

import colab_notebooks as cn
from grader.build.config import ASSIGNMENT
from grader.grade import grade_submission
from nbgrader_course import Course, release_notebook

pytestmark = pytest.mark.e2e

SVG = "PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+"  # <svg onload="alert(1)"/>


def as_v3_cell(cell) -> dict:
    fields = {key: value for key, value in dict(cell).items() if key not in ("source", "id", "execution_count")}
    return {**fields, "input": cell.source, "language": "python"} if cell.cell_type == "code" else fields | {
        "source": cell.source}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course.create(tmp_path_factory.mktemp("untrusted-notebooks"))
    answered = cn.answered(release_notebook(), cn.reference_answers())
    pictured = cn.answered(release_notebook(), cn.reference_answers())
    pictured.cells.insert(1, v4.new_markdown_cell("**My figure** ![figure](attachment:figure.svg)",
                                                  attachments={"figure.svg": {"image/svg+xml": SVG}}))
    pictured.cells.insert(2, v4.new_markdown_cell("[click](javascript:alert(1))"))
    cn.write(pictured, course.submitted("pictured"))
    both = {"nbformat": 3, "nbformat_minor": 0, "metadata": dict(release_notebook().metadata),
            "cells": [dict(cell) for cell in answered.cells],  # what a v3 reader never looks at
            "worksheets": [{"metadata": {}, "cells": [as_v3_cell(c) for c in release_notebook().cells]}]}
    course.submitted("both").parent.mkdir(parents=True, exist_ok=True)
    course.submitted("both").write_text(json.dumps(both, default=str), encoding="utf-8")
    course.nbgrader("autograde", ASSIGNMENT)
    course.nbgrader("generate_feedback", ASSIGNMENT)
    return course


def test_cells_and_worksheets_score_the_same_through_nbgrader_and_grader_grade(course):
    kit = grade_submission(course.submitted("both"))
    assert kit.get("refused") is None
    assert course.report("both")["score"] == kit["score"] == 0.0  # the worksheets' stubs, on both paths


def test_an_svg_attachment_and_a_script_link_leave_a_feedback_page_without_them(course):
    page = course.feedback("pictured").read_text(encoding="utf-8")
    assert "<strong>My figure</strong>" in page  # the prose beside the SVG still rendered
    urls = re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", page.lower())
    assert not [url for url in urls if url.startswith(("javascript:", "data:image/svg"))], urls
    assert SVG.lower() not in page.lower() and "[click](javascript:alert(1))" in page  # shown as text, not a link
