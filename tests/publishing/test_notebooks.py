"""Do the source, release and solution notebooks keep their contracts, and do they run top to bottom?"""
from __future__ import annotations

import ast

import nbformat
import pytest
from nbclient import NotebookClient

from grader.build.colab_badge import colab_url
from grader.build.config import COLAB_PLACEHOLDER, ROOT, SOURCE_NOTEBOOK

pytestmark = pytest.mark.unit

RELEASE = "release/attention/attention.ipynb"
SOLUTION = "solutions/attention/attention.ipynb"
NOTEBOOKS = [SOURCE_NOTEBOOK, RELEASE, SOLUTION]
GRADED_NAMES = ("scaled_dot_product_attention", "MultiHeadAttention")
TEST_CELLS = {"sdpa_tests": ("sdpa", 10), "mha_tests": ("mha", 10)}
HIDDEN_BLOCK = '### BEGIN HIDDEN TESTS\nimport grader.hidden\ngrader.hidden.score_part("{part}")\n### END HIDDEN TESTS'


def read(path: str) -> nbformat.NotebookNode:
    return nbformat.read(ROOT / path, as_version=4)


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def nbgrader_meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def defined_names(cell) -> set[str]:
    tree = ast.parse(cell.source)
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def execute(path: str) -> nbformat.NotebookNode:
    nb = read(path)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(ROOT)}}).execute()
    return nb


def errors(nb) -> dict[str, list[str]]:
    """cell id -> the names of the exceptions its outputs show."""
    found = {}
    for cell in code_cells(nb):
        names = [output.ename for output in cell.outputs if output.output_type == "error"]
        if names:
            found[cell.id] = names
    return found


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_each_graded_name_is_defined_in_exactly_one_code_cell(path):
    """Is each graded name defined in one code cell, after the provided imports cell?"""
    cells = code_cells(read(path))
    imports = next(index for index, cell in enumerate(cells) if nbgrader_meta(cell).get("grade_id") == "imports")
    for name in GRADED_NAMES:
        holders = [index for index, cell in enumerate(cells) if name in defined_names(cell)]
        assert len(holders) == 1, f"{path}: {name} is defined in {len(holders)} code cells"
        assert holders[0] > imports, f"{path}: {name} is defined before the imports cell"
    for module in ("import math", "import torch", "import torch.nn as nn", "import torch.nn.functional as F"):
        assert module in cells[imports].source


@pytest.mark.parametrize("path", [SOURCE_NOTEBOOK, RELEASE])
def test_graded_test_cells_keep_their_ids_and_points(path):
    """Are there exactly two autograded cells, sdpa_tests and mha_tests, worth 10 points each, and locked provided cells?"""
    cells = code_cells(read(path))
    graded = {nbgrader_meta(cell)["grade_id"]: nbgrader_meta(cell)["points"] for cell in cells if nbgrader_meta(cell).get("grade")}
    assert graded == {grade_id: points for grade_id, (_, points) in TEST_CELLS.items()}
    by_id = {nbgrader_meta(cell).get("grade_id"): nbgrader_meta(cell) for cell in cells}
    for grade_id in ("imports", "model_args", "selfcheck", *TEST_CELLS):
        assert by_id[grade_id]["locked"], f"{path}: {grade_id} must be locked"
    for grade_id in ("sdpa", "mha"):
        assert by_id[grade_id]["solution"], f"{path}: {grade_id} must be a solution cell"


def test_source_test_cells_end_with_the_hidden_block():
    """Does each autograded cell of the source end with the hidden-test hook of its part?"""
    cells = {nbgrader_meta(cell).get("grade_id"): cell for cell in code_cells(read(SOURCE_NOTEBOOK))}
    for grade_id, (part, _) in TEST_CELLS.items():
        assert cells[grade_id].source.endswith(HIDDEN_BLOCK.format(part=part)), f"{grade_id} lost its hidden block"


@pytest.mark.parametrize("path", [RELEASE, SOLUTION])
def test_hidden_tests_never_reach_students(path):
    """Are the hidden blocks gone from what students and the published solutions show?"""
    text = "\n".join(cell.source for cell in read(path).cells)
    assert "HIDDEN TESTS" not in text and "grader.hidden" not in text


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_notebook_metadata_asks_colab_for_no_gpu(path):
    """Is the notebook a python3 notebook that leaves the runtime to the student? CPU is enough, as its first
    cell says; an `accelerator` entry would make Colab ask for a GPU runtime on opening."""
    nb = read(path)
    assert nb.nbformat == 4
    assert "accelerator" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", [RELEASE, SOLUTION])
def test_colab_badge_points_at_the_file_itself(path):
    """Does the Open-in-Colab badge link to this very notebook in the configured repository?"""
    title = read(path).cells[0].source
    assert f"]({colab_url(path)})" in title
    assert COLAB_PLACEHOLDER not in title


@pytest.mark.e2e
def test_untouched_release_runs_to_the_end_with_a_failed_self_check_per_part():
    """Run top to bottom, does the student notebook raise nowhere, print a ❌ not-implemented verdict (on stderr,
    which `nbgrader validate` counts as failed) in each test cell, and still reach the throughput section?"""
    nb = execute(RELEASE)
    assert errors(nb) == {}
    for cell in code_cells(nb):
        if nbgrader_meta(cell).get("grade"):
            stderr = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr")
            assert "❌" in stderr and "[not-implemented]" in stderr, cell.outputs
    bench = next(cell for cell in code_cells(nb) if cell.id == "bench")
    assert "PyTorch F.sdpa" in "".join(o.get("text", "") for o in bench.outputs)


@pytest.mark.e2e
def test_solution_notebook_runs_clean_on_cpu():
    """Does the solution notebook run top to bottom without an error, throughput section and both self-checks included?"""
    nb = execute(SOLUTION)
    assert errors(nb) == {}
    printed = "".join(output.get("text", "") for cell in code_cells(nb) for output in cell.outputs)
    assert "✅ Part 1" in printed and "✅ Part 2" in printed
    assert "yours" in printed, "the throughput table did not measure the student's implementation"
