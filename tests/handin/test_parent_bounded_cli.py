"""Do `grader grade` and `grade-all` stay within the parent's budget on the worst hand-ins the caps allow? The
CPU time of the grading process itself (resource.getrusage at its exit; the sandbox workers are other processes),
never wall time.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.paths import REFERENCE, ROOT
from grader.handin import parent_budget
from grader.exercises.attention import MAX_SCORE
from support.worst_case_code import binding_line, nesting, statements

pytestmark = pytest.mark.sandbox

OWN_CPU = ("import atexit, resource, runpy, sys; out = sys.argv.pop(1); "
           "atexit.register(lambda: open(out, 'w').write(str(sum(resource.getrusage(resource.RUSAGE_SELF)[:2])))); "
           "runpy.run_module('grader', run_name='__main__', alter_sys=True)")
"""Runs the grader's CLI and writes the CPU seconds the process itself used (user + system) to a file."""


def run_grader(args: list[str], cpu_file: Path) -> tuple[subprocess.CompletedProcess, float]:
    done = subprocess.run([sys.executable, "-c", OWN_CPU, str(cpu_file), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=1200)
    return done, float(cpu_file.read_text())


def test_grader_grade_reads_a_line_binding_n_names_within_the_budget(tmp_path):
    path = tmp_path / "binding.py"
    path.write_text(binding_line(), encoding="utf-8")
    done, cpu = run_grader(["grade", str(path), "--json"], tmp_path / "cpu")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["checks"]
    assert cpu < parent_budget.CPU_SECONDS + 15, f"{cpu:.1f} s"


def test_grade_all_gives_every_worst_hand_in_a_row_within_the_budget(tmp_path):
    """Two worst hand-ins and an honest one: a row each, the honest one full marks, the parent's CPU time
    within one budget per submission."""
    root = tmp_path / "class"
    root.mkdir()
    (root / "nest.py").write_text(nesting(), encoding="utf-8")
    (root / "many.py").write_text(statements(), encoding="utf-8")
    (root / "alice.py").write_bytes(REFERENCE.read_bytes())
    out = tmp_path / "class.json"
    done, cpu = run_grader(["grade-all", str(root), "--json", str(out), "--lang", "en"], tmp_path / "cpu")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {row["student"]: row for row in json.loads(out.read_text(encoding="utf-8"))}
    assert set(rows) == {"nest", "many", "alice"} and rows["alice"]["score"] == MAX_SCORE
    assert cpu < 3 * parent_budget.CPU_SECONDS + 15, f"{cpu:.1f} s"
