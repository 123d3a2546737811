"""Is a notebook read the same way on every path? `grader grade` and grade-all read the file themselves;
nbgrader reads it through nbformat. A file holding both `cells` and `worksheets` once scored 20/20 on the first
and 0/20 on the second: both now read what nbformat reads (by the declared version), and a version nbformat would
read otherwise (none, 1, a string) is refused with a plain reason.
"""
from __future__ import annotations

import json

import nbformat
import pytest

from support import colab_notebooks as cn
from grader.nbgrader.grade_with_hidden_graders import code_as_submitted
from grader.handin.source import load_submission, submission_from_cells
from support.nbgrader_course import release_notebook

pytestmark = pytest.mark.unit


def two_readings(tmp_path, version: int):
    """A file with the answers in one list of cells and the bare stubs in the other (answers where `version` does not
    look): the kit's own reading and the one nbgrader's path makes (nbformat, then the grading step's cells)."""
    answered, stubs = cn.answered(release_notebook(), cn.reference_answers()), release_notebook()
    v4_cells = [dict(cell) for cell in answered.cells]  # what a v3 reader must not take
    v3_cells = [{**{k: v for k, v in dict(c).items() if k != "source"}, "input": c.source, "language": "python"}
                if c.cell_type == "code" else dict(c) for c in stubs.cells]
    if version == 4:
        v4_cells, v3_cells = [dict(cell) for cell in stubs.cells], [
            {**{k: v for k, v in dict(c).items() if k != "source"}, "input": c.source, "language": "python"}
            if c.cell_type == "code" else dict(c) for c in answered.cells]
    raw = {"nbformat": version, "nbformat_minor": 0, "metadata": {}, "cells": v4_cells,
           "worksheets": [{"cells": v3_cells, "metadata": {}}]}
    path = tmp_path / f"both-v{version}.ipynb"
    path.write_text(json.dumps(raw, default=str), encoding="utf-8")
    kit = load_submission(path)
    through_nbformat = submission_from_cells(code_as_submitted(nbformat.read(path, as_version=4)), str(path))
    return kit, through_nbformat


@pytest.mark.parametrize("version", [3, 4])
def test_cells_and_worksheets_are_read_as_nbformat_reads_them(tmp_path, version):
    kit, through_nbformat = two_readings(tmp_path, version)
    assert kit.refusal is None and kit.source == through_nbformat.source
    assert "raise NotImplementedError" in kit.source  # the stubs, where nbformat looks: no 20/20 on one path only


@pytest.mark.parametrize("declared", [None, 1, "4", 5])
def test_a_version_nbformat_reads_otherwise_is_refused_with_a_plain_reason(tmp_path, declared):
    raw = {"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}}], "metadata": {}}
    if declared is not None:
        raw["nbformat"] = declared
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps(raw), encoding="utf-8")
    refusal = load_submission(path).refusal
    assert refusal is not None and refusal.mistake == "not-a-notebook"
    assert "nbformat" in refusal.zh and "version 3 or 4" in refusal.en
