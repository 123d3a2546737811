"""Does RestoreMissingCells put back every locked release cell a notebook lacks, in the right place, without touching the rest?"""
from __future__ import annotations

import nbformat
import pytest

from support import colab_notebooks as cn
from grader.nbgrader.restore_missing_cells import RestoreMissingCells
from support.nbgrader_course import apply, ids, release_course, release_notebook, repaired

pytestmark = pytest.mark.unit

GRADED = ["imports", "model_args", "selfcheck", "sdpa", "sdpa_tests", "mha", "mha_tests"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return release_course(tmp_path_factory.mktemp("release-course"))


@pytest.fixture(scope="module")
def answered():
    return cn.answered(release_notebook(), cn.reference_answers())


def test_nothing_is_added_to_a_complete_notebook(answered, course):
    """Is a notebook that has every locked cell left unchanged?"""
    assert apply(RestoreMissingCells, answered, course) == answered


def test_deleted_test_cells_come_back_after_their_function(answered, course):
    """Are deleted test cells put back right after the cell that defines the function they test?"""
    nb = cn.delete(answered, "sdpa_tests", "mha_tests")
    nb = apply(RestoreMissingCells, nb, course)
    order = ids(nb)
    assert order.index("sdpa_tests") == order.index("sdpa") + 1
    assert order.index("mha_tests") == order.index("mha") + 1
    release = release_notebook()
    for grade_id in ("sdpa_tests", "mha_tests"):
        restored = nb.cells[cn.cell_by_id(nb, grade_id)]
        original = release.cells[cn.cell_by_id(release, grade_id)]
        assert restored.source == original.source and restored.metadata == original.metadata
        assert restored.outputs == []


def test_deleted_provided_cells_come_back_in_release_order(answered, course):
    """Are the deleted imports and ModelArgs cells put back, in order, before the student's code?"""
    nb = apply(RestoreMissingCells, cn.delete(answered, "imports", "model_args"), course)
    assert [g for g in ids(nb) if g] == GRADED


def test_a_test_cell_follows_the_function_the_student_moved(answered, course):
    """When the answer sits in a cell moved to the end and its test cell is gone, does the test cell follow it there?"""
    nb = cn.delete(cn.move(answered, "sdpa", len(answered.cells)), "sdpa_tests")
    nb = apply(RestoreMissingCells, nb, course)
    assert ids(nb)[-2:] == ["sdpa", "sdpa_tests"]


def test_student_cells_are_all_kept_in_order(answered, course):
    """Is every cell of the student's kept, in the student's order, around the inserted ones?"""
    nb = cn.delete(answered, "sdpa_tests", "imports")
    before = [cell.source for cell in nb.cells]
    after = [cell.source for cell in apply(RestoreMissingCells, nb, course).cells]
    remaining = iter(after)
    assert all(any(source == other for other in remaining) for source in before)  # a subsequence
    assert len(after) == len(before) + 2


def test_a_colab_notebook_stays_valid_nbformat_4_0(answered, course):
    """Does a notebook saved by Colab (nbformat 4.0, no cell ids) stay valid with the inserted cells?"""
    nb = cn.colab_saved(cn.strip_nbgrader(cn.delete(answered, "sdpa_tests", "model_args")))
    nb = repaired(nb, course)
    assert nb.nbformat_minor == 0 and all("id" not in cell for cell in nb.cells)
    nbformat.validate(nb)
    assert [g for g in ids(nb) if g] == GRADED


def test_inserted_cells_get_fresh_ids_in_nbformat_4_5(answered, course):
    """In an nbformat 4.5 notebook, does an inserted cell get an id no other cell has?"""
    nb = cn.delete(answered, "mha_tests")
    nb.cells[0].id = "mha_tests"  # the release cell's id, taken by another cell
    nb = apply(RestoreMissingCells, nb, course)
    cell_ids = [cell.id for cell in nb.cells]
    assert len(set(cell_ids)) == len(cell_ids)
    nbformat.validate(nb)


def test_every_repair_is_noted(answered, course):
    """Is each inserted cell recorded for the student's graded output?"""
    nb = apply(RestoreMissingCells, cn.delete(answered, "sdpa_tests", "mha_tests"), course)
    notes = nb.metadata["attention_kit"]["repairs"]
    assert len(notes) == 2 and "sdpa_tests" in notes[0]["en"] and "mha_tests" in notes[1]["zh"]
