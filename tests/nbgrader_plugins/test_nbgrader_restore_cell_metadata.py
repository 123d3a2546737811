"""Does RestoreCellMetadata give each submitted cell the nbgrader metadata of the release cell it is, by what it defines?"""
from __future__ import annotations

import copy
import logging

import pytest

from support import colab_notebooks as cn
from grader.nbgrader.restore_cell_metadata import RestoreCellMetadata
from support.nbgrader_course import apply, ids, release_course, release_notebook

pytestmark = pytest.mark.unit

GRADED = ["imports", "model_args", "selfcheck", "sdpa", "sdpa_tests", "mha", "mha_tests"]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return release_course(tmp_path_factory.mktemp("release-course"))


@pytest.fixture(scope="module")
def release():
    return release_notebook()


@pytest.fixture(scope="module")
def answered(release):
    return cn.answered(release, cn.reference_answers())


def restore(nb, course):
    return apply(RestoreCellMetadata, nb, course)


def meta(nb, grade_id):
    return nb.cells[cn.cell_by_id(nb, grade_id)].metadata["nbgrader"]


def test_untouched_release_keeps_its_metadata(release, course):
    """Is a notebook that kept its metadata left exactly as it was?"""
    assert restore(release, course) == release


def test_stripped_metadata_comes_back_for_every_cell(answered, course):
    """Does a notebook with nbgrader's metadata stripped (and saved by Colab) get every cell's metadata back?"""
    nb = restore(cn.colab_saved(cn.strip_nbgrader(answered)), course)
    assert [g for g in ids(nb) if g] == GRADED
    for grade_id in GRADED:
        assert meta(nb, grade_id) == meta(answered, grade_id)
    assert nb.cells[cn.cell_by_id(nb, "sdpa_tests")].metadata["editable"] is False


def test_edited_grade_flags_and_points_are_reset(answered, course):
    """Is a test cell whose `grade` flag or points a student edited, or an answer made a grade cell, reset to the release?"""
    nb = copy.deepcopy(answered)
    meta(nb, "sdpa_tests").update(grade=False)
    meta(nb, "mha_tests").update(points=100)
    meta(nb, "sdpa").update(grade=True, points=5)
    nb = restore(nb, course)
    for grade_id in ("sdpa_tests", "mha_tests", "sdpa"):
        assert meta(nb, grade_id) == meta(answered, grade_id)


def test_the_graded_function_is_the_solution_cell_wherever_it_is(answered, course):
    """Is the cell that defines MultiHeadAttention the `mha` cell, even moved up and stripped of metadata?"""
    nb = cn.strip_nbgrader(cn.move(answered, "mha", 4))
    nb = restore(nb, course)
    assert ids(nb)[4] == "mha"
    assert "class MultiHeadAttention" in nb.cells[4].source


def test_of_two_definitions_the_last_one_is_the_solution_cell(release, course):
    """When the function is defined twice (a stub, then the answer in a copy), is the last cell the graded one?"""
    nb = cn.duplicate(release, "sdpa")
    first = cn.cell_by_id(nb, "sdpa")
    nb.cells[first + 1].source = cn.reference_answers()["sdpa"]
    nb = restore(nb, course)
    assert ids(nb)[first] is None and ids(nb)[first + 1] == "sdpa"
    assert "nbgrader" not in nb.cells[first].metadata


def test_a_test_cell_holding_student_code_stays_the_students(release, course):
    """Is a test cell into which the student wrote their function kept as their cell, so OverwriteCells cannot erase it?"""
    nb = copy.deepcopy(release)
    tests = nb.cells[cn.cell_by_id(nb, "sdpa_tests")]
    tests.source = cn.reference_answers()["sdpa"] + "\n\n" + tests.source
    index = cn.cell_by_id(nb, "sdpa_tests")
    nb = restore(nb, course)
    assert ids(nb)[index] == "sdpa"  # the last definition of the function is this cell now
    assert "sdpa_tests" not in ids(nb)  # put back by RestoreMissingCells
    assert nb.cells[index].source == tests.source


def test_a_provided_cell_with_extra_code_is_not_locked(answered, course):
    """Is an imports cell to which the student added a helper left unlocked, since locking would erase the helper?"""
    nb = cn.edit(answered, "imports", "import torch.nn.functional as F",
                 "import torch.nn.functional as F\n\nNEG_INF = float('-inf')")
    index = cn.cell_by_id(nb, "imports")
    nb = restore(nb, course)
    assert ids(nb)[index] is None and "NEG_INF" in nb.cells[index].source


def test_a_split_cell_gives_its_metadata_to_one_half(answered, course):
    """When the imports cell is split in two, does exactly one half become `imports` and the other stay plain?"""
    nb = cn.split(answered, "imports", "import torch")
    index = cn.cell_by_id(nb, "imports")
    nb = restore(nb, course)
    assert [g for g in ids(nb)[index:index + 2]].count("imports") == 1
    assert [g for g in ids(nb) if g] == GRADED


def test_a_cell_split_from_the_answer_keeps_the_helper_as_the_students(answered, course):
    """When the SDPA cell is split into a helper cell and the function, is the function's half `sdpa`?"""
    nb = cn.edit(answered, "sdpa", "def scaled_dot_product_attention(",
                 "def _future(T, device):\n    return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)\n\n\n"
                 "def scaled_dot_product_attention(")
    nb = cn.split(nb, "sdpa", "def scaled_dot_product_attention(")
    index = cn.cell_by_id(nb, "sdpa")
    nb = restore(nb, course)
    assert ids(nb)[index:index + 2] == [None, "sdpa"]
    assert "def _future" in nb.cells[index].source


def test_reordered_cells_keep_their_identity(answered, course):
    """Are cells moved around (tests at the end, MHA first) still recognised, and left where the student put them?"""
    nb = cn.move(cn.move(answered, "mha", 4), "sdpa_tests", len(answered.cells))
    sources = [cell.source for cell in nb.cells]
    nb = restore(cn.strip_nbgrader(nb), course)
    assert ids(nb)[4] == "mha" and ids(nb)[-1] == "sdpa_tests"
    assert [cell.source for cell in nb.cells] == sources


def test_stale_metadata_on_other_cells_is_removed(answered, course):
    """Does a cell that matches no release cell lose the nbgrader metadata it carried (a copied test cell)?"""
    nb = copy.deepcopy(answered)
    nb.cells[1].metadata["nbgrader"] = copy.deepcopy(meta(answered, "mha_tests"))  # the runtime cell
    nb = restore(nb, course)
    assert "nbgrader" not in nb.cells[1].metadata
    assert [g for g in ids(nb) if g] == GRADED


def test_garbage_metadata_is_replaced(answered, course):
    """Is nbgrader metadata that is not even a mapping (a hand-edited file) replaced or removed, without a crash?"""
    nb = copy.deepcopy(answered)
    nb.cells[cn.cell_by_id(nb, "sdpa")].metadata["nbgrader"] = "solution please"
    nb.cells[0].metadata["nbgrader"] = ["grade"]
    nb = restore(nb, course)
    assert [g for g in ids(nb) if g] == GRADED and "nbgrader" not in nb.cells[0].metadata


def test_repairs_are_noted_for_the_student(answered, course):
    """Are the repairs recorded in the notebook metadata, for the graded output to tell the student?"""
    nb = restore(cn.strip_nbgrader(answered), course)
    (note,) = nb.metadata["attention_kit"]["repairs"]
    assert "sdpa_tests" in note["en"] and "sdpa_tests" in note["zh"]
    assert "attention_kit" not in restore(answered, course).metadata


def test_restoring_a_colab_download_is_one_line_of_information_not_a_warning_per_cell(answered, course, caplog):
    """Colab strips nbgrader's metadata from every cell it saves: that is routine, one INFO line naming the
    cells, not seven warnings an instructor would read as problems."""
    caplog.set_level(logging.DEBUG)
    restore(cn.colab_saved(cn.strip_nbgrader(answered)), course)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    (line,) = [r for r in caplog.records if "nbgrader metadata restored" in r.getMessage()]
    assert line.levelno == logging.INFO and f"for {len(GRADED)} cell(s)" in line.getMessage()
