"""Through nbgrader itself (one autograde for this module): does a notebook holding both `cells` and `worksheets`
score what `grader grade` gives it? (It scored 20/20 there and 0/20 here.)
"""
from __future__ import annotations

import json

import pytest

from support import colab_notebooks as cn
from grader.build.config import ASSIGNMENT
from grader.grade import grade_submission
from support.nbgrader_course import Course, release_notebook

pytestmark = pytest.mark.e2e


def as_v3_cell(cell) -> dict:
    fields = {key: value for key, value in dict(cell).items() if key not in ("source", "id", "execution_count")}
    return {**fields, "input": cell.source, "language": "python"} if cell.cell_type == "code" else fields | {
        "source": cell.source}


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course.create(tmp_path_factory.mktemp("untrusted-notebooks"))
    answered = cn.answered(release_notebook(), cn.reference_answers())
    both = {"nbformat": 3, "nbformat_minor": 0, "metadata": dict(release_notebook().metadata),
            "cells": [dict(cell) for cell in answered.cells],  # what a v3 reader never looks at
            "worksheets": [{"metadata": {}, "cells": [as_v3_cell(c) for c in release_notebook().cells]}]}
    course.submitted("both").parent.mkdir(parents=True, exist_ok=True)
    course.submitted("both").write_text(json.dumps(both, default=str), encoding="utf-8")
    course.nbgrader("autograde", ASSIGNMENT)
    return course


def test_cells_and_worksheets_score_the_same_through_nbgrader_and_grader_grade(course):
    kit = grade_submission(course.submitted("both"))
    assert kit.get("refused") is None
    assert course.report("both")["score"] == kit["score"] == 0.0  # the worksheets' stubs, on both paths
