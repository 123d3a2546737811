"""Does the self-check published in release/attention/ work alone, with only what Colab has?

Every test here copies release/attention/ (nothing else from the repository) into a temporary folder
and runs it with a virtual environment holding only torch, pytest, numpy, matplotlib and nbformat,
built once and cached under /tmp (the grader, nbgrader and this repository are not importable there).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support import public_selfcheck
from support.public_selfcheck import clean_env, selfcheck
from grader.catalog import catalog
from support.paths import ROOT

RELEASE = ROOT / "release" / "attention"
SOLUTION_NOTEBOOK = ROOT / "solutions" / "attention" / "attention.ipynb"
MUTANTS = ROOT / "tests" / "submissions" / "mutants"
# Mutants that attack the process running them (a memory bomb, an endless loop, os._exit): the self-check
# runs the student's code on the student's own machine, unconfined, so it is no place for them.
PROCESS_ATTACKS = ("memory-limit", "timeout", "tampering")
# The classic mistakes the public self-check names by their catalog id (the rest of the mutant set fails
# or passes as the table in test_notebook_cells_and_pytest_agree_on_every_mutant records).
NAMED = [
    "args-field-name", "args-field-name__2", "bare-matmul", "bare-matmul__2", "dropout-in-eval", "dropout-in-eval__2",
    "dropout-hardcoded", "dropout-lowercase", "head-split", "head-split__2", "head-split__3", "is-causal-typo", "is-causal-typo__3",
    "mask-after-softmax", "mask-diagonal", "mask-direction", "mask-missing", "mask-missing__2", "mask-multiplied",
    "layers-in-forward", "mask-not-sliced", "mask-not-sliced__2", "missing-contiguous", "missing-contiguous__2", "missing-out-proj",
    "missing-scale", "missing-scale__2", "misspelled-tensor", "misspelled-tensor__2", "not-implemented",
    "not-implemented__2", "softmax-dim", "syntax-error", "syntax-error__2", "wrong-return", "wrong-return__2",
    "wrong-scale", "wrong-scale__2",
]

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="session")
def colab_python() -> Path:
    return public_selfcheck.colab_python()


@pytest.fixture
def release_copy(tmp_path) -> Path:
    return public_selfcheck.release_copy("attention", tmp_path)


@pytest.mark.unit
def test_release_folder_needs_nothing_from_the_repository():
    """Does release/attention/ import neither grader nor nbgrader, and hold no hidden check?"""
    for path in RELEASE.iterdir():
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":
            text = "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells if c.cell_type == "code")
        assert not re.search(r"^\s*(import|from)\s+(grader|nbgrader)\b", text, re.MULTILINE), path.name
        assert "HIDDEN TESTS" not in text and "score_part" not in text, path.name


@pytest.mark.unit
def test_selfcheck_mistake_titles_are_the_catalogs():
    """Does every id the self-check names exist in the catalog, with the catalog's zh and en titles?"""
    sys.path.insert(0, str(RELEASE))
    try:
        import selfcheck as module
    finally:
        sys.path.remove(str(RELEASE))
    for mistake, (title_zh, title_en, _, _) in module.SELFCHECK_MISTAKES.items():
        if mistake in module.SELFCHECK_OWN_MISTAKES:
            assert mistake not in catalog()
            continue
        assert (catalog()[mistake]["title_zh"], catalog()[mistake]["title_en"]) == (title_zh, title_en), mistake


def test_reference_notebook_passes(colab_python, release_copy):
    shutil.copy(SOLUTION_NOTEBOOK, release_copy / "attention.ipynb")
    result = selfcheck(colab_python, release_copy)
    assert result.returncode == 0 and "9 passed" in result.stdout, result.stdout[-2000:]


def test_untouched_stub_fails_and_explains_once(colab_python, release_copy):
    result = selfcheck(colab_python, release_copy)
    assert result.returncode == 1 and "7 failed" in result.stdout, result.stdout[-2000:]
    assert "[not-implemented] 未完成实现 · Not implemented" in result.stdout
    # Counted in the failure sections only: pytest's short summary repeats each message's head, cut to the
    # terminal's width, or whole where CI is set in the environment (as on our CI).
    failures = result.stdout.split("short test summary info")[0]
    assert failures.count("Replace the TODO's NotImplementedError line") == 1
    assert "public_report" not in result.stdout and "Traceback" not in result.stdout


def test_a_part_marker_checks_only_that_part(colab_python, release_copy):
    shutil.copy(SOLUTION_NOTEBOOK, release_copy / "attention.ipynb")
    assert "4 passed, 5 deselected" in selfcheck(colab_python, release_copy, "-m", "part1").stdout
    assert "5 passed, 4 deselected" in selfcheck(colab_python, release_copy, "-m", "part2").stdout


@pytest.mark.parametrize("mutant", ["missing-scale", "bare-matmul", "missing-out-proj"])
def test_attention_py_beside_the_notebook_is_checked_and_the_mistake_named(colab_python, release_copy, mutant):
    """With attention.py in the folder (a local student), is it the file checked, failing with the mutant's id, in
    a few lines? A wrong number and code that raises in Part 1, a missing layer in Part 2: that every classic
    mistake gets its own id is test_notebook_cells_and_pytest_agree_on_every_mutant's, in one process."""
    shutil.copy(MUTANTS / f"{mutant}.py", release_copy / "attention.py")
    result = selfcheck(colab_python, release_copy)
    assert result.returncode == 1 and f"[{mutant}]" in result.stdout, result.stdout[-2000:]
    assert len(result.stdout.splitlines()) < 40, "a few lines per mistake, not a dump"


NOTEBOOK_RUN = r'''
import contextlib, io, json, re, sys
import nbformat
folder, mutant_paths = sys.argv[1], sys.argv[2:]
sys.path.insert(0, folder)
import conftest, selfcheck
from pathlib import Path
release = nbformat.read(Path(folder) / "attention.ipynb", as_version=4)
found = {}
for path in mutant_paths:
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    split = next((i for i, line in enumerate(lines) if line.startswith("class MultiHeadAttention")), len(lines))
    student = {"sdpa": "\n".join(lines[:split]), "mha": "\n".join(lines[split:])}  # one cell per part, as in the notebook
    namespace = conftest.load_namespace(Path(path))[0]
    syntax = conftest.load_namespace(Path(path))[1]
    by_pytest = {part: sorted({f.mistake for f in selfcheck.run_part(part, namespace).values() if f})
                 for part in ("part1", "part2")}
    if syntax:
        by_pytest = {part: ["syntax-error"] for part in by_pytest}
    # the notebook, run as Colab's "Run all" would: each code cell in order; a cell that raises stops the run
    kernel, printed, stopped = {"__name__": "__main__"}, {}, False
    for cell in release.cells:
        if cell.cell_type != "code" or cell.id in ("runtime", "heatmap", "bench", "bench_plot", "scale_demo"):
            continue
        source = student.get(cell.id, cell.source)
        kernel.setdefault("In", [""]).append(source)  # IPython's input history, which the rules check reads
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(compile(source, cell.id, "exec"), kernel)
        except BaseException:
            stopped = cell.id
            break
        printed[cell.id] = (out.getvalue(), err.getvalue())
    by_cells = {}
    for part, cell_id in (("part1", "sdpa_tests"), ("part2", "mha_tests")):
        if stopped and cell_id not in printed:
            by_cells[part] = "stopped in " + stopped
            continue
        out, err = printed[cell_id]
        by_cells[part] = sorted(set(re.findall(r"^✗ [^:\n]+: \[([a-z-]+)\]", err, re.MULTILINE))) if "❌" in err else []
    found[Path(path).stem] = {"pytest": by_pytest, "cells": by_cells}
print(json.dumps(found))
'''


def test_notebook_cells_and_pytest_agree_on_every_mutant(colab_python, release_copy):
    """On the whole mutant set, do the notebook's self-check cells and the pytest self-check give the same
    verdict per part (the same ids when both run; a notebook whose student cell raises counts as failed),
    and does every classic mistake in NAMED fail with its own id?"""
    mutants = sorted(p for p in MUTANTS.glob("*.py") if not p.stem.startswith(PROCESS_ATTACKS))
    done = subprocess.run([str(colab_python), "-c", NOTEBOOK_RUN, str(release_copy), *map(str, mutants)],
                          env=clean_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert len(found) == len(mutants)
    for name, seen in found.items():
        for part in ("part1", "part2"):
            cells, by_pytest = seen["cells"][part], seen["pytest"][part]
            if cells == "stopped in " + {"part1": "sdpa", "part2": "mha"}[part]:  # the part's own cell raised
                assert by_pytest, f"{name} {part}: the notebook stopped in the student's cell, pytest passed"
            elif isinstance(cells, str) or by_pytest == ["syntax-error"]:
                continue  # Run all stopped earlier, or a .py that does not parse fails whole: nothing to compare
            else:
                assert cells == by_pytest, f"{name} {part}: cells {cells} vs pytest {by_pytest}"
    for name in NAMED:
        ids = {m for part in found[name]["pytest"].values() for m in part}
        assert name.split("__")[0] in ids, f"{name}: self-check named {ids}"


@pytest.mark.unit
def test_the_standalone_selfcheck_declares_the_assignments_parts():
    """release/ imports no grader, so selfcheck.py (as built, its rules table in) names the parts again: held equal here."""
    import importlib.util

    from grader.exercises import attention

    spec = importlib.util.spec_from_file_location("selfcheck_declared", ROOT / "release" / "attention" / "selfcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.SELFCHECK_TITLE == {part.marker: part.label for part in attention.PARTS}
    assert list(module.SELFCHECK_CHECKS) == list(module.SELFCHECK_GRADED) == [p.marker for p in attention.PARTS]
    assert {module.SELFCHECK_GRADED[p.marker][0] for p in attention.PARTS} == set(attention.GRADED_NAMES)
