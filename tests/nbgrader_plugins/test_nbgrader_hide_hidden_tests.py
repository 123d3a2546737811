"""Does HideHiddenTests remove the hidden test code from feedback, and do the visible self-checks leak no reference values?"""
from __future__ import annotations

import ast

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from grader.build.config import ROOT, SOURCE_NOTEBOOK
from grader.nbgrader.hide_hidden_tests import HideHiddenTests

import pytest

pytestmark = pytest.mark.unit

HIDDEN = "### BEGIN HIDDEN TESTS\nimport grader.hidden\ngrader.hidden.score_part(\"sdpa\")\n### END HIDDEN TESTS"


def hide(*sources: str) -> list[str]:
    nb, _ = HideHiddenTests().preprocess(new_notebook(cells=[new_code_cell(s) for s in sources]), {})
    return [cell.source for cell in nb.cells]


def test_hidden_blocks_are_removed_and_nothing_else():
    """Is the hidden block removed from a test cell while its visible self-check stays?"""
    (source,) = hide("_check_sdpa()\n\n" + HIDDEN + "\n")
    assert source == "_check_sdpa()"


def test_every_cell_is_cleaned_without_raising():
    """Is a block in a student's own (non-grade) cell removed too, where nbgrader's ClearHiddenTests would raise?"""
    assert hide("x = 1\n" + HIDDEN, "y = 2") == ["x = 1", "y = 2"]


def test_an_unterminated_block_is_removed_to_the_end_of_its_cell():
    """Does a BEGIN marker without END hide the rest of that cell only?"""
    assert hide("a = 1\n### BEGIN HIDDEN TESTS\nsecret()", "b = 2") == ["a = 1", "b = 2"]


def test_source_notebook_hidden_blocks_are_all_found():
    """Does every hidden block of the source notebook disappear, leaving its test cells' visible code?"""
    nb = nbformat.read(ROOT / SOURCE_NOTEBOOK, as_version=4)
    hidden_cells = [cell for cell in nb.cells if "BEGIN HIDDEN TESTS" in cell.source]
    assert len(hidden_cells) == 2
    nb, _ = HideHiddenTests().preprocess(nb, {})
    text = "\n".join(cell.source for cell in nb.cells)
    assert "HIDDEN TESTS" not in text and "grader.hidden" not in text
    assert 'selfcheck_notebook("part1", globals())' in text and 'selfcheck_notebook("part2", globals())' in text


def test_visible_self_checks_hold_no_stored_reference_values():
    """Do the test cells students see (and feedback shows) compute references on the fly, with no stored expected numbers?

    Allowed literals: shapes and sizes (small ints), tolerances, seeds, and the few constants of the
    spec (1 for row sums, 0.0 for masked weights, 100 / 10.0 for adversarial inputs, 0.5 dropout).
    A tensor or list of floats written out would be a reference value; so would any other float.
    """
    nb = nbformat.read(ROOT / "release" / "attention" / "attention.ipynb", as_version=4)
    tests = [cell for cell in nb.cells if cell.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert len(tests) == 2
    allowed_floats = {0.0, 0.5, 1.0, 10.0, 1e-5, 1e-6}
    for cell in tests:
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, float):
                assert node.value in allowed_floats, f"{cell.metadata.nbgrader.grade_id}: float literal {node.value}"
            if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
                assert abs(node.value) <= 100, f"{cell.metadata.nbgrader.grade_id}: int literal {node.value}"
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("tensor", "as_tensor", "load"):
                raise AssertionError(f"{cell.metadata.nbgrader.grade_id}: a stored tensor ({ast.unparse(node)[:60]})")
            if isinstance(node, (ast.List, ast.Tuple)) and sum(
                    isinstance(e, ast.Constant) and isinstance(e.value, float) for e in node.elts) > 1:
                raise AssertionError(f"{cell.metadata.nbgrader.grade_id}: a list of floats ({ast.unparse(node)[:60]})")
