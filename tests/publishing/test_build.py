"""Does `make build` turn the source notebook into exactly the committed release/, exercises/ and solutions/?"""
from __future__ import annotations

import difflib
import importlib.util
import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import grader.build as build
from grader.build import TARGETS, render
from grader.build.clear_hidden_tests import clear_hidden_tests
from grader.build.clear_outputs import clear_outputs
from grader.build.colab_badge import colab_badge, colab_url
from grader.build.config import COLAB_PLACEHOLDER, ROOT
from grader.build.python_module import python_module
from grader.build.read_write import notebook_bytes
from grader.build.strip_solution_markers import strip_solution_markers

pytestmark = pytest.mark.unit

RELEASE = ROOT / "release/attention/attention.ipynb"
EXERCISES = ROOT / "exercises/attention/attention.py"
SOLUTIONS_PY = ROOT / "solutions/attention/attention.py"

# Each pitfall the TODO markers must name: all of its phrases inside one TODO comment block.
PITFALLS = {
    "torch.matmul, not a bare matmul": ("torch.matmul", "bare matmul("),
    "torch.Tensor spelled right in annotations": ("torch.Tensor", "torch.Tenser"),
    # the conceptual pitfalls are named with their goal and a pointer, not handed out as code (the demo cell shows it)
    ".contiguous() before .view() after a transpose (or .reshape)": ("(B, H, T, d)", "(B, T, C)", ".view() 与 .contiguous()"),
    "nn.Dropout with a capital D": ("nn.Dropout", "nn.dropout"),
    "is_causal spelled right and stored on self": ("self.is_causal", "is_casual"),
    "the mask created on the input's device": ("device=Q.device",),
    "the mask registered as a buffer": ("register_buffer", "(1, 1, L, L)"),
    "the mask sliced to the current length": ("max_seq_len", "长度为 T"),
    "scaling by √head_dim, not √dim": ("√head_dim", "not √dim"),
}

KV_CACHE_PITFALLS = {
    "repeat, not repeat_interleave: the groups mixed up": ("x.repeat(1, n_rep, 1, 1)", "h // n_rep", "h % H_kv"),
    "the cache on the given device": ("device=device",),
    "only what was written read back": ("max_seq_len", "start_pos + T"),
    "wk and wv sized by n_kv_heads": ("wk", "n_kv_heads", "not n_heads"),
    "the causal mask offset by start_pos": ("start_pos + i", "(T, T)"),
    "the mask on the input's device": ("device=x.device",),
    "scaling by √head_dim, not √dim": ("√head_dim", "not √dim"),
}
"""The second exercise's mistakes (issue 45), each named by one TODO block as the first exercise's are."""


def code_text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


def all_text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(cell.source for cell in nb.cells)


def solution_lines(nb: nbformat.NotebookNode) -> list[str]:
    """The code (trailing comments dropped) of every non-blank, non-comment line inside a solution region."""
    lines, inside = [], False
    for line in code_text(nb).splitlines():
        stripped = line.strip()
        if stripped == "### BEGIN SOLUTION":
            inside = True
        elif stripped == "### END SOLUTION":
            inside = False
        elif inside:
            code = re.sub(r"\s+#.*$", "", stripped)
            if code and not code.startswith("#"):
                lines.append(code)
    return lines


def todo_blocks(text: str) -> list[str]:
    """Each `# TODO` comment line with the comment lines that follow it (consecutive TODO lines join one block)."""
    blocks, current = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# TODO") or (current is not None and stripped.startswith("#")):
            current = (current or []) + [stripped]
        elif current is not None:
            blocks.append(" ".join(current))
            current = None
    if current is not None:
        blocks.append(" ".join(current))
    return blocks


def load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def release() -> nbformat.NotebookNode:
    return nbformat.read(RELEASE, as_version=4)


@pytest.fixture(scope="module")
def fresh_build(tmp_path_factory) -> Path:
    """A fresh build of every target, written into a temporary folder."""
    out = tmp_path_factory.mktemp("fresh-build")
    for path, data in render().items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(data)
    return out


# --- the build as a whole -------------------------------------------------------------------------


GENERATED = [target.path for target in TARGETS] + list(build.COPIES) + list(build.SOURCE_NOTEBOOKS)
"""Every file the build writes: the targets, the pytest self-check copied beside them, and each source
notebook's self-check cell, inlined from source/<assignment>/selfcheck.py."""


@pytest.mark.e2e
@pytest.mark.parametrize("path", GENERATED)
def test_committed_file_equals_a_fresh_build(fresh_build, path):
    """Is every committed generated file, byte for byte, what the build produces from the source now?"""
    committed = ROOT / path
    built = (fresh_build / path).read_bytes()
    assert committed.is_file(), f"{path} is missing: run `make build` and commit it"
    if committed.read_bytes() != built:
        diff = difflib.unified_diff(
            committed.read_text(encoding="utf-8").splitlines(),
            built.decode("utf-8").splitlines(),
            "committed", "fresh build", lineterm="", n=1,
        )
        pytest.fail(f"{path} differs from a fresh build; run `make build` and commit:\n" + "\n".join(list(diff)[:40]))


@pytest.mark.e2e
def test_building_twice_changes_no_byte(fresh_build):
    """Does a second build produce exactly the bytes of the first?"""
    for path, data in render().items():
        assert (fresh_build / path).read_bytes() == data, f"{path} changed between two builds"


def test_check_mode_reports_differences_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Does `build --check` name the stale files, fail, and leave them alone, while a plain build rewrites them?"""
    files = {"release/a.ipynb": b"new\n", "exercises/b.py": b"same\n"}
    (tmp_path / "release").mkdir()
    (tmp_path / "exercises").mkdir()
    (tmp_path / "release/a.ipynb").write_bytes(b"old\n")
    (tmp_path / "exercises/b.py").write_bytes(b"same\n")
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.setattr(build, "render", lambda *, record_db: files)

    assert build.main(check=True) == 1
    assert "differs: release/a.ipynb" in capsys.readouterr().out
    assert (tmp_path / "release/a.ipynb").read_bytes() == b"old\n"

    assert build.main(check=False) == 0
    assert (tmp_path / "release/a.ipynb").read_bytes() == b"new\n"
    assert build.main(check=True) == 0


# --- what students get ----------------------------------------------------------------------------


@pytest.mark.parametrize("exercise", ["attention", "kv_cache"])
def test_no_solution_line_reaches_students(exercise):
    """Is every line of every solution region absent from the release notebook and from exercises/?"""
    lines = solution_lines(nbformat.read(ROOT / f"source/{exercise}/{exercise}.ipynb", as_version=4))
    assert len(lines) >= 15, f"only {len(lines)} solution lines found: is the region parser broken?"
    published = (ROOT / f"solutions/{exercise}/{exercise}.py").read_text(encoding="utf-8")
    assert [line for line in lines if line not in published] == [], "the solutions module lost solution lines"
    release = nbformat.read(ROOT / f"release/{exercise}/{exercise}.ipynb", as_version=4)
    module = (ROOT / f"exercises/{exercise}/{exercise}.py").read_text(encoding="utf-8")
    for name, text in (("release notebook", all_text(release)), ("exercises module", module)):
        leaked = [line for line in lines if line in text]
        assert leaked == [], f"solution code in the {name}: {leaked}"


@pytest.mark.parametrize("exercise", ["attention", "kv_cache"])
def test_every_declared_exercise_is_built_from_its_own_source(exercise):
    """Does the build write each exercise's notebook, modules and self-check files, each module headed by its own
    exercise's docstring, so that one build serves every assignment of the course?"""
    written = {target.path for target in TARGETS} | set(build.COPIES)
    assert {f"release/{exercise}/{exercise}.ipynb", f"exercises/{exercise}/{exercise}.py",
            f"solutions/{exercise}/{exercise}.ipynb", f"solutions/{exercise}/{exercise}.py",
            f"release/{exercise}/selfcheck.py", f"release/{exercise}/conftest.py",
            f"release/{exercise}/test_{exercise}.py", f"exercises/{exercise}/test_{exercise}.py"} <= written
    for folder, words in (("exercises", f"练习 `{exercise}`"), ("solutions", f"the `{exercise}` assignment")):
        head = (ROOT / f"{folder}/{exercise}/{exercise}.py").read_text(encoding="utf-8").split('"""')[1]
        assert words in head and f"source/{exercise}/{exercise}.ipynb" in head, head


@pytest.mark.parametrize("where", ["release", "exercises"])
@pytest.mark.parametrize("pitfall", PITFALLS, ids=list(PITFALLS))
def test_every_pitfall_has_a_todo_marker(release, where, pitfall):
    """Does one TODO comment block name the pitfall, in the release notebook and in the exercises module?"""
    text = code_text(release) if where == "release" else EXERCISES.read_text(encoding="utf-8")
    phrases = PITFALLS[pitfall]
    assert any(all(phrase in block for phrase in phrases) for block in todo_blocks(text)), (
        f"no TODO block in {where} names the pitfall {pitfall!r} (phrases {phrases})")


@pytest.mark.parametrize("where", ["release", "exercises"])
@pytest.mark.parametrize("pitfall", KV_CACHE_PITFALLS, ids=list(KV_CACHE_PITFALLS))
def test_every_kv_cache_pitfall_has_a_todo_marker(where, pitfall):
    """Does one TODO comment block of the second exercise name each of its mistakes, where students read it?"""
    path = "release/kv_cache/kv_cache.ipynb" if where == "release" else "exercises/kv_cache/kv_cache.py"
    text = (code_text(nbformat.read(ROOT / path, as_version=4)) if where == "release"
            else (ROOT / path).read_text(encoding="utf-8"))
    phrases = KV_CACHE_PITFALLS[pitfall]
    assert any(all(phrase in block for phrase in phrases) for block in todo_blocks(text)), (
        f"no TODO block in {where} names the pitfall {pitfall!r} (phrases {phrases})")


@pytest.mark.parametrize("exercise", ["attention", "kv_cache"])
def test_every_solution_region_follows_a_todo(exercise):
    """Is each `### BEGIN SOLUTION` directly preceded by a TODO comment block (so the stub keeps it)?"""
    regions = 0
    for cell in nbformat.read(ROOT / f"source/{exercise}/{exercise}.ipynb", as_version=4).cells:
        lines = cell.source.splitlines()
        for index, line in enumerate(lines):
            if line.strip() == "### BEGIN SOLUTION":
                regions += 1
                comments, above = [], index - 1
                while above >= 0 and lines[above].strip().startswith("#"):
                    comments.append(lines[above].strip())
                    above -= 1
                assert any(comment.startswith("# TODO") for comment in comments), (
                    f"solution region {regions} (cell {cell.id}) has no TODO comment right above it")
    assert regions >= 8


def test_exercises_module_imports_and_raises_not_implemented():
    """Is exercises/attention/attention.py importable, with stubs that raise NotImplementedError?"""
    module = load_module(EXERCISES, "exercise_attention_under_test")
    Q = torch.randn(2, 4, 8)
    with pytest.raises(NotImplementedError):
        module.scaled_dot_product_attention(Q, Q, Q)
    with pytest.raises(NotImplementedError):
        module.MultiHeadAttention(module.ModelArgs())


def test_solutions_module_matches_pytorch():
    """Does the reference solution module agree with PyTorch's attention?"""
    module = load_module(SOLUTIONS_PY, "solution_attention_under_test")
    torch.manual_seed(0)
    Q, K, V = torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 5)
    out, weights = module.scaled_dot_product_attention(Q, K, V, is_causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=True))
    assert (weights.triu(diagonal=1) == 0).all()
    mha = module.MultiHeadAttention(module.ModelArgs(dim=12, n_heads=3, max_seq_len=16), is_causal=True)
    x = torch.randn(2, 7, 12)
    assert mha(x, x, x).shape == (2, 7, 12)
    assert mha.mask.shape == (1, 1, 16, 16) and "mask" in mha.state_dict()


# --- the steps, one by one ------------------------------------------------------------------------


def test_clear_hidden_tests_removes_only_the_hidden_block():
    """Are hidden test blocks removed while the visible asserts stay?"""
    cell = new_code_cell("assert True\n### BEGIN HIDDEN TESTS\nimport grader.hidden\n### END HIDDEN TESTS", id="t")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "locked": True, "points": 1,
                                 "schema_version": 3, "solution": False, "task": False}
    nb = clear_hidden_tests(new_notebook(cells=[cell]), "x.ipynb")
    assert nb.cells[0].source.strip() == "assert True"


def test_strip_solution_markers_keeps_the_code_and_its_indentation():
    """Are only the marker lines dropped from solution regions?"""
    nb = new_notebook(cells=[new_code_cell("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION", id="s")])
    assert strip_solution_markers(nb, "x.py").cells[0].source == "def f():\n    return 1"


def test_clear_outputs_empties_outputs_and_counts():
    """Are outputs and execution counts of code cells cleared?"""
    cell = new_code_cell("1", id="c", execution_count=3, outputs=[nbformat.v4.new_output("stream", text="1")])
    nb = clear_outputs(new_notebook(cells=[cell]), "x.ipynb")
    assert nb.cells[0].outputs == [] and nb.cells[0].execution_count is None


def test_colab_badge_links_to_the_generated_file():
    """Does the badge placeholder become the Colab URL of the file being written, and is a missing one an error?"""
    nb = new_notebook(cells=[new_markdown_cell(f"[![Open In Colab](badge.svg)]({COLAB_PLACEHOLDER})", id="m")])
    nb = colab_badge(nb, "release/attention/attention.ipynb")
    assert nb.cells[0].source == f"[![Open In Colab](badge.svg)]({colab_url('release/attention/attention.ipynb')})"
    with pytest.raises(ValueError):
        colab_badge(nb, "release/attention/attention.ipynb")


def test_python_module_exports_only_tagged_cells_in_order():
    """Does the module writer take just the cells tagged `export`, in notebook order, under its docstring?"""
    cells = [new_code_cell("a = 1", id="a"), new_code_cell("print(a)", id="b"), new_code_cell("b = 2", id="c")]
    cells[0].metadata["tags"] = cells[2].metadata["tags"] = ["export"]
    text = python_module("Doc.")(new_notebook(cells=cells), "x.py").decode()
    assert text == '"""Doc.\n"""\na = 1\n\n\nb = 2\n'
    with pytest.raises(ValueError):
        python_module("Doc.")(new_notebook(cells=[cells[1]]), "x.py")


def test_notebook_bytes_needs_stable_cell_ids():
    """Is a cell without an id refused (nbformat would invent a random one and break determinism)?"""
    nb = new_notebook(cells=[new_code_cell("1", id="one")])
    assert notebook_bytes(nb, "x.ipynb").endswith(b"}\n")
    del nb.cells[0]["id"]
    with pytest.raises(ValueError):
        notebook_bytes(nb, "x.ipynb")


def test_a_placeholder_colab_repo_is_warned_about_and_a_real_one_is_not(monkeypatch, capsys):
    import grader.build as build

    monkeypatch.setattr(build, "COLAB_REPO", build.COLAB_PLACEHOLDER_REPO)
    build._warn_placeholder_colab_repo()
    warned = capsys.readouterr().err
    assert "COLAB_REPO is still the placeholder" in warned and "fails for students" in warned
    monkeypatch.setattr(build, "COLAB_REPO", "a-course/attention-release")
    build._warn_placeholder_colab_repo()
    assert capsys.readouterr().err == ""
