"""Does the report cache key change with every input a verdict depends on, and with nothing else?

grader.report.cache.key on fixed inputs: no sandbox.
"""
import dataclasses

import pytest

from grader.report import cache as report_cache
from grader.sandbox.confinement import Limits
from grader.handin.source import submission_from_cells
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

CELLS = ["import torch", "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    return Q, K"]
CHECKS = ["sdpa.shapes", "sdpa.values"]
TORCH = "2.13.0+cpu"


def key(cells=CELLS, path="a.ipynb", is_notebook=True, checks=CHECKS, limits=None, cuda=False, torch_version=TORCH):
    submission = submission_from_cells(cells, path, is_notebook=is_notebook)
    return report_cache.key(submission, checks, limits or Limits(visible=["/usr"]), cuda, torch_version)


def changed(value):
    """Another value of the same kind, for any Limits field."""
    if isinstance(value, bool):
        return not value
    if value is None:
        return 12345
    if isinstance(value, (int, float)):
        return value + 1
    return [*value, "/opt/elsewhere"]


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(Limits)])
def test_every_limit_changes_the_key(field):
    limits = Limits(visible=["/usr"])
    other = dataclasses.replace(limits, **{field: changed(getattr(limits, field))})
    assert key(limits=other) != key(limits=limits)


@pytest.mark.parametrize("change", [
    {"cells": [CELLS[0], CELLS[1].replace("return Q, K", "return K, Q")]},  # the code
    {"cells": ["import torch\n" + CELLS[1]]},  # the same code from other cells: lines map elsewhere
    {"cells": [*CELLS, "def broken(:"]},  # a syntax error the report quotes
    {"is_notebook": False},  # places are "line n", not "cell c, line n"
    {"checks": CHECKS[:1]},
    {"cuda": True},
    {"torch_version": "2.14.0+cpu"},
], ids=["code", "cells", "syntax-error", "not-a-notebook", "checks", "cuda", "torch"])
def test_each_input_changes_the_key(change):
    assert key(**change) != key()


def test_a_changed_grader_changes_the_key(monkeypatch):
    before = key()
    monkeypatch.setattr(report_cache, "grader_fingerprint", lambda: "another grader")
    assert key() != before


def test_nothing_else_changes_the_key():
    """Not the file's name or folder (grade-all and nbgrader autograde name one notebook differently), not
    a fresh but equal Limits, not the text of the student's experiments that never run (dropped lines)."""
    assert key(path="submitted/alice/attention/attention.ipynb") == key(path="/tmp/x/Copy of attention.ipynb") == key()
    assert key(limits=Limits(visible=["/usr"])) == key(limits=Limits(visible=["/usr"]))
    assert key(cells=[*CELLS, "print('experiment')"]) == key(cells=[*CELLS, "plot(another_experiment)"])


def test_two_graders_of_one_source_compute_its_report_once(tmp_path, monkeypatch):
    """A parallel job or test worker that meets a report being computed waits for it instead of grading again."""
    import threading
    import time

    from grader import grade
    from grader.checks import checks_for

    computed = []

    def slow_checks(submission, checks, limits, use_cuda, static=None, remaining=None):
        computed.append(threading.get_ident())
        time.sleep(0.3)  # long enough that the second grader arrives while the first computes
        return {"score": 1.0}

    monkeypatch.setattr(grade, "_run_checks", slow_checks)
    submission = submission_from_cells(CELLS, "a.ipynb", is_notebook=True)
    reports = []
    graders = [threading.Thread(target=lambda: reports.append(
        grade.Grading(submission, checks_for(exercise=EXERCISE), Limits(visible=["/usr"]), False, tmp_path).report())) for _ in range(2)]
    for grader in graders:
        grader.start()
    for grader in graders:
        grader.join()
    assert reports == [{"score": 1.0}] * 2 and len(computed) == 1, computed
    assert [path.suffix for path in tmp_path.iterdir()] == [".json"], "the folder keeps the report, no lock file"


def test_a_cached_report_costs_the_budget_the_seconds_it_took(tmp_path, monkeypatch):
    """The fix search shares the hand-in's one budget with its grading: graded again from the cache, the original's
    seconds (and each cached regrade's) are charged as when they ran, so the search gets the same time, not 60 s."""
    from grader import grade
    from grader.checks import checks_for

    clock = [1000.0]
    monkeypatch.setattr(grade.time, "monotonic", lambda: clock[0])
    seconds = {CELLS[1]: 35.0, CELLS[1] + "  # edited": 20.0}

    def checks(submission, checks, limits, use_cuda, static=None, remaining=None):
        clock[0] += next(cost for cell, cost in seconds.items() if submission.source.rstrip().endswith(cell))
        return {"score": 1.0, "max_score": 1.0, "checks": []}

    limits = Limits(visible=["/usr"], submission_seconds=60)
    submission = submission_from_cells(CELLS, "a.ipynb", is_notebook=True)
    edited = submission_from_cells([CELLS[0], CELLS[1] + "  # edited"], "a.ipynb", is_notebook=True)
    monkeypatch.setattr(grade, "_run_checks", checks)
    afresh = grade.Grading(submission, checks_for(exercise=EXERCISE), limits, False, tmp_path)
    afresh.report()
    afresh.regrade(edited)
    assert afresh.left() == 5.0

    seconds.update({cell: 0.0 for cell in seconds})  # were anything run again, it would now cost nothing
    again = grade.Grading(submission, checks_for(exercise=EXERCISE), limits, False, tmp_path)
    assert again.report() == {"score": 1.0, "max_score": 1.0, "checks": []}
    assert again.left() == 25.0
    again.regrade(edited)
    assert again.left() == 5.0
