"""Does Colab's "Run all" reach Part 2 whatever Part 1's code does?

Run all stops at the first cell that raises. The provided cells after a TODO (the heatmap, the
benchmark and its plot) run the student's code, so each must survive any exception from it and
print a short hint instead. Two ways to check, with every Part 1 mutant spliced into Part 1:

- every Part 1 mutant through the release notebook's code cells run in order, stopping at the first
  exception, each in a process forked from one that imported torch once (a kernel per mutant costs
  ten times more on two cores); the benchmark measures two short lengths there instead of four;
- a few representative notebooks end to end in a Jupyter kernel of this venv with nbclient, which
  stops at the first error as Colab does (no allow_errors): the release stub with the benchmark as
  released, the representative mistakes with the short one.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from support.hand_ins import header
from support.paths import ROOT

pytestmark = pytest.mark.e2e

RELEASE = ROOT / "release" / "attention" / "attention.ipynb"
SOLUTION = ROOT / "solutions" / "attention" / "attention.ipynb"
MUTANTS = ROOT / "tests" / "submissions" / "mutants"
# Mutants that attack the process running them (a memory bomb, an endless loop, os._exit): nothing a
# notebook cell can survive, and the self-check is no place for them (tests/student/test_public_selfcheck.py).
PROCESS_ATTACKS = ("memory-limit", "timeout", "tampering")
PART1_MUTANTS = sorted(p for p in MUTANTS.glob("*.py")
                       if header(p, "part") == "sdpa" and not p.stem.startswith(PROCESS_ATTACKS))
# The benchmark's lengths and window, cut for the many runs of the cheap path; asserted present, so a change
# to the cell makes this test fail rather than silently run the full benchmark or nothing.
SHORT_BENCHMARK = {"(128, 256, 512, 1024)": "(16, 32)", "window_s=0.1": "window_s=0.001"}

RUN_ALL = r'''
import contextlib, io, json, os, signal, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
import torch

cells = json.loads(sys.stdin.read())  # [(mutant name, [(cell id, source), ...]), ...]


def run_all(code_cells):
    """Each cell in order in one namespace, as a kernel would; the first exception stops the run."""
    namespace, printed = {"__name__": "__main__"}, {}
    for cell_id, source in code_cells:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(source, f"<cell {cell_id}>", "exec"), namespace)
        except BaseException as error:
            return {"stopped": cell_id, "error": f"{type(error).__name__}: {error}"[:300], "printed": printed}
        finally:
            printed[cell_id] = out.getvalue()
            matplotlib.pyplot.close("all")
    return {"stopped": None, "error": None, "printed": printed}


results = {}
for name, code_cells in cells:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the mutant runs in its own process: what it does to torch or the namespace stays there
        os.close(read)
        signal.alarm(120)
        with os.fdopen(write, "w") as channel:
            json.dump(run_all(code_cells), channel)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as channel:
        text = channel.read()
    os.waitpid(pid, 0)
    results[name] = json.loads(text) if text else {"stopped": "?", "error": "the run died", "printed": {}}
print(json.dumps(results))
'''


def part1_of(mutant: Path) -> str:
    """The mutant's Part 1: its text up to the module (imports, ModelArgs and the function, as a student's cell may hold)."""
    lines = mutant.read_text(encoding="utf-8").splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("class MultiHeadAttention"))
    return "\n".join(lines[:end])


def notebook_with(part1: str | None) -> nbformat.NotebookNode:
    """The release notebook with the reference Part 2 and `part1` (None: the release's own stub) in Part 1."""
    nb = nbformat.read(RELEASE, as_version=4)
    solution = {cell.id: cell.source for cell in nbformat.read(SOLUTION, as_version=4).cells}
    for cell in nb.cells:
        if cell.id == "mha":
            cell.source = solution["mha"]
        elif cell.id == "sdpa" and part1 is not None:
            cell.source = part1
    return nb


def short_benchmark(source: str) -> str:
    for old, new in SHORT_BENCHMARK.items():
        assert old in source, f"the benchmark cell no longer holds {old!r}: update SHORT_BENCHMARK"
        source = source.replace(old, new)
    return source


@pytest.fixture(scope="module")
def run_all_results() -> dict:
    runs = []
    for name, part1 in [("release stub", None)] + [(p.stem, part1_of(p)) for p in PART1_MUTANTS]:
        cells = [(c.id, short_benchmark(c.source) if c.id == "bench" else c.source)
                 for c in notebook_with(part1).cells if c.cell_type == "code"]
        runs.append((name, cells))
    done = subprocess.run([sys.executable, "-c", RUN_ALL], input=json.dumps(runs), capture_output=True, text=True,
                          timeout=1500, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def own_cell_raises(part1: str) -> bool:
    """Does the student's Part 1 cell itself raise when it runs (a misspelled annotation, a syntax error)? Then
    Run all stops in the student's own cell, which no provided cell can help."""
    namespace: dict = {}
    exec("import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n", namespace)
    try:
        exec(compile(part1, "<sdpa>", "exec", dont_inherit=True), namespace)
    except Exception:
        return True
    return False


def test_run_all_reaches_part_2_with_every_part_1_mutant(run_all_results):
    """Every Part 1 mutant (and the untouched stub): Run all never stops in a provided cell, Part 2's
    self-check runs and passes (the reference Part 2 is in the notebook), and no provided cell prints a
    traceback; a run stops in Part 1 only where the student's own cell raises."""
    assert len(run_all_results) == len(PART1_MUTANTS) + 1
    mutants = {p.stem: p for p in PART1_MUTANTS}
    reached = []
    for name, run in run_all_results.items():
        if run["stopped"] == "sdpa" and name in mutants:
            assert own_cell_raises(part1_of(mutants[name])), f"{name}: stopped in Part 1's cell: {run['error']}"
            continue
        assert run["stopped"] is None, f"{name}: Run all stopped in the provided cell {run['stopped']}: {run['error']}"
        assert "✅ Part 2 · MultiHeadAttention" in run["printed"]["mha_tests"], f"{name}: {run['printed']['mha_tests']}"
        assert not any("Traceback" in text for text in run["printed"].values()), name
        reached.append(name)
    assert len(reached) >= len(run_all_results) - 3, "most mutants define their function without raising"


def test_a_provided_cell_explains_in_one_short_hint(run_all_results):
    """The heatmap after a bare matmul: one hint naming the error and pointing at the self-check, zh and en."""
    heatmap = run_all_results["bare-matmul__2"]["printed"]["heatmap"]
    assert "跳过热力图" in heatmap and "Skipped the heatmap" in heatmap
    assert "NameError: name 'matmul' is not defined" in heatmap and len(heatmap.splitlines()) == 2
    assert "先完成任务 1" in run_all_results["release stub"]["printed"]["heatmap"]


REPRESENTATIVE = ["bare-matmul__2", "wrong-return", "hardcoded-dims__3"]


@pytest.mark.parametrize("name", [None] + REPRESENTATIVE)
def test_the_release_notebook_runs_top_to_bottom_in_a_kernel(name, tmp_path):
    """In a real kernel, stopping at the first error (as Colab's Run all): the released notebook, as released,
    with a representative Part 1 mistake (a bare matmul, only `out` returned, dims written for (T, d)). The
    benchmark runs as released with the stub (about 5 s), and short with the mistakes, as in the cheap path."""
    nb = notebook_with(None if name is None else part1_of(MUTANTS / f"{name}.py"))
    if name is not None:
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.id == "bench":
                cell.source = short_benchmark(cell.source)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    texts = {cell.id: "".join(o.get("text", "") for o in cell.outputs) for cell in nb.cells if cell.cell_type == "code"}
    assert "✅ Part 2 · MultiHeadAttention" in texts["mha_tests"]
    assert "❌ Part 1" in texts["sdpa_tests"]
