"""Do the source, release and solution notebooks keep their contracts, and do they run top to bottom?"""
from __future__ import annotations

import ast

import nbformat
import pytest
from nbclient import NotebookClient

from grader.build.colab_badge import colab_url
from grader.build.config import COLAB_PLACEHOLDER, ROOT

pytestmark = pytest.mark.unit

SOURCE_NOTEBOOK = "source/attention/attention.ipynb"
RELEASE = "release/attention/attention.ipynb"
SOLUTION = "solutions/attention/attention.ipynb"
GRADED = {"attention": ("scaled_dot_product_attention", "MultiHeadAttention"),
          "kv_cache": ("repeat_kv", "KVCache", "GroupedQueryAttention")}
"""Each exercise's graded names, as its notebook promises them (written here: the tests hold the declaration to it)."""
TESTS = {"attention": {"sdpa_tests": ("sdpa", 10), "mha_tests": ("mha", 10)},
         "kv_cache": {"repeat_tests": ("repeat", 4), "cache_tests": ("cache", 6), "gqa_tests": ("gqa", 10)}}
"""Each exercise's autograded cells: grade_id -> (the part its hidden block scores, its points)."""
PROVIDED = {"attention": ("imports", "model_args", "selfcheck"),
            "kv_cache": ("imports", "model_args", "causal_attention", "selfcheck")}


def notebooks(*folders: str) -> list[str]:
    return [f"{folder}/{name}/{name}.ipynb" for name in GRADED for folder in folders]


def exercise_of(path: str) -> str:
    return path.split("/")[1]
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


@pytest.mark.parametrize("path", notebooks("source", "release", "solutions"))
def test_each_graded_name_is_defined_in_exactly_one_code_cell(path):
    """Is each graded name defined in one code cell, after the provided imports cell?"""
    cells = code_cells(read(path))
    imports = next(index for index, cell in enumerate(cells) if nbgrader_meta(cell).get("grade_id") == "imports")
    for name in GRADED[exercise_of(path)]:
        holders = [index for index, cell in enumerate(cells) if name in defined_names(cell)]
        assert len(holders) == 1, f"{path}: {name} is defined in {len(holders)} code cells"
        assert holders[0] > imports, f"{path}: {name} is defined before the imports cell"
    for module in ("import math", "import torch", "import torch.nn as nn", "import torch.nn.functional as F"):
        assert module in cells[imports].source


@pytest.mark.parametrize("path", notebooks("source", "release"))
def test_graded_test_cells_keep_their_ids_and_points(path):
    """Are the autograded cells exactly the exercise's (sdpa_tests and mha_tests, 10 points each; repeat_tests 4,
    cache_tests 6, gqa_tests 10), the provided cells locked, and each part's code a solution cell?"""
    cells, tests = code_cells(read(path)), TESTS[exercise_of(path)]
    graded = {nbgrader_meta(cell)["grade_id"]: nbgrader_meta(cell)["points"] for cell in cells if nbgrader_meta(cell).get("grade")}
    assert graded == {grade_id: points for grade_id, (_, points) in tests.items()}
    by_id = {nbgrader_meta(cell).get("grade_id"): nbgrader_meta(cell) for cell in cells}
    for grade_id in (*PROVIDED[exercise_of(path)], *tests):
        assert by_id[grade_id]["locked"], f"{path}: {grade_id} must be locked"
    for part, _ in tests.values():
        assert by_id[part]["solution"], f"{path}: {part} must be a solution cell"


@pytest.mark.parametrize("path", notebooks("source", "release", "solutions"))
def test_the_provided_cells_before_the_first_part_are_exported(path):
    """Do the plain modules (exercises/, solutions/) get the provided imports, ModelArgs and, in kv_cache, lab 1's
    attention: every provided cell but the self-check tagged `export`?"""
    cells = {nbgrader_meta(cell).get("grade_id"): cell for cell in code_cells(read(path))}
    for grade_id in PROVIDED[exercise_of(path)]:
        exported = "export" in cells[grade_id].metadata.get("tags", [])
        assert exported == (grade_id != "selfcheck"), f"{path}: {grade_id}"


@pytest.mark.parametrize("name", GRADED)
def test_source_test_cells_end_with_the_hidden_block(name):
    """Does each autograded cell of the source end with the hidden-test hook of its part?"""
    cells = {nbgrader_meta(cell).get("grade_id"): cell for cell in code_cells(read(f"source/{name}/{name}.ipynb"))}
    for grade_id, (part, _) in TESTS[name].items():
        assert cells[grade_id].source.endswith(HIDDEN_BLOCK.format(part=part)), f"{grade_id} lost its hidden block"


@pytest.mark.parametrize("path", notebooks("release", "solutions"))
def test_hidden_tests_never_reach_students(path):
    """Are the hidden blocks gone from what students and the published solutions show?"""
    text = "\n".join(cell.source for cell in read(path).cells)
    assert "HIDDEN TESTS" not in text and "grader.hidden" not in text


@pytest.mark.parametrize("path", notebooks("source", "release", "solutions"))
def test_notebook_metadata_asks_colab_for_no_gpu(path):
    """Is the notebook a python3 notebook that leaves the runtime to the student? CPU is enough, as its first
    cell says; an `accelerator` entry would make Colab ask for a GPU runtime on opening."""
    nb = read(path)
    assert nb.nbformat == 4
    assert "accelerator" not in nb.metadata
    assert nb.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.parametrize("path", notebooks("release", "solutions"))
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


@pytest.mark.e2e
def test_untouched_kv_cache_release_runs_to_the_end_with_a_failed_self_check_per_part():
    """Run top to bottom, does the second exercise's student notebook raise nowhere, print a ❌ not-implemented verdict
    in each test cell, and reach the decoding section, which says to finish the tasks first?"""
    nb = execute("release/kv_cache/kv_cache.ipynb")
    assert errors(nb) == {}
    for cell in code_cells(nb):
        if nbgrader_meta(cell).get("grade"):
            stderr = "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr")
            assert "❌" in stderr and "[not-implemented]" in stderr, cell.outputs
    decode = next(cell for cell in code_cells(nb) if cell.id == "decode")
    assert "Finish Task 3 first" in "".join(o.get("text", "") for o in decode.outputs)


@pytest.mark.e2e
def test_kv_cache_solution_notebook_runs_clean_on_cpu():
    """Does the second exercise's solution notebook run top to bottom without an error, its three self-checks
    passing and its decoding section timing both ways to the same outputs?"""
    nb = execute("solutions/kv_cache/kv_cache.ipynb")
    assert errors(nb) == {}
    printed = "".join(output.get("text", "") for cell in code_cells(nb) for output in cell.outputs)
    assert "✅ Part 1" in printed and "✅ Part 2" in printed and "✅ Part 3" in printed
    decode = "".join(o.get("text", "") for o in next(c for c in code_cells(nb) if c.id == "decode").outputs)
    assert "不带缓存 no cache" in decode and "带缓存 with cache" in decode
    largest = float(decode.split("largest difference between the two: ")[1].split()[0])
    assert largest < 1e-4, decode
