"""Does nbgrader's path stay bounded at the caps? nbgrader grades one notebook after another, so a notebook that
keeps its steps busy makes the class wait. CPU time of this process (and tracemalloc's peak), never wall time.
"""
from __future__ import annotations

import time
import tracemalloc

import pytest
from nbformat import v4

from support import colab_notebooks as cn
from grader.handin import parent_budget
from grader.exercises.attention import MAX_SCORE
from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders
from grader.nbgrader.release_cells import kit_metadata
from grader.handin.source import MAX_CODE_BYTES, MAX_STATEMENTS
from support.nbgrader_course import apply, release_course, release_notebook, repaired

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return release_course(tmp_path_factory.mktemp("bounded-course"))


def with_code_cells(cells: list[str]):
    nb = cn.answered(release_notebook(), cn.reference_answers())
    nb.cells += [v4.new_code_cell(text) for text in cells]
    return nb


def test_the_metadata_repair_reads_no_code_over_the_caps(course):
    """A cell of 1 MiB of code (twice the code cap): the repair reads none of it. It parsed every cell first:
    +1.55 GiB and +18 s per 2 MiB."""
    line = "x = a + b + c + d + e + f + g + h + i + j + k + l + m + n + o + p + q + r + s + t\n"
    nb = with_code_cells([line * (2 * MAX_CODE_BYTES // len(line))])
    assert sum(len(c.source) for c in nb.cells if c.cell_type == "code") > 2 * MAX_CODE_BYTES
    tracemalloc.start()
    started = time.process_time()
    try:
        repaired(nb, course)
        spent, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert spent < 2.0, f"{spent:.1f} s"
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_a_notebook_of_many_cells_at_the_caps_is_repaired_and_graded_within_the_budget(course):
    """As many one-statement cells as the statement cap allows, through the repair steps and the grading step:
    the parent's CPU time within its budget per submission, and the answers still score full marks."""
    nb = with_code_cells([f"x{i} = {i}" for i in range(MAX_STATEMENTS - 200)])
    started = time.process_time()
    graded = apply(GradeWithHiddenGraders, repaired(nb, course), course)
    spent = time.process_time() - started
    assert spent < parent_budget.CPU_SECONDS, f"{spent:.1f} s"
    assert kit_metadata(graded)["report"]["score"] == MAX_SCORE
