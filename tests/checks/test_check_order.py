"""Check order is data (each part package's ORDER), not the order in which modules happen to be imported: a check
that reads an earlier check's outcome (`ctx.outcomes`) always finds the same ones there. A check missing from
ORDER, or an ORDER naming no check, stops the grader instead of silently reordering."""
import importlib
import json
import subprocess
import sys

import pytest

from grader.exercises.attention import PARTS
from grader.checks import checks_for
from support.paths import ROOT
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

ORDERS = {part.id: importlib.import_module(f"grader.checks.{part.id}").ORDER for part in PARTS}
DECLARED = [check_id for part in PARTS for check_id in ORDERS[part.id]]


def test_the_checks_run_in_each_parts_declared_order():
    assert [c.id for c in checks_for(exercise=EXERCISE)] == DECLARED


def test_importing_the_check_modules_in_another_order_changes_nothing():
    """In a fresh interpreter, each part's modules imported last-first (the gates' module before the values')."""
    modules = [f"grader.checks.{part}.{name}" for part, names in (("mha", ("runtime", "state", "behaviour")),
                                                                   ("sdpa", ("runtime", "numerics", "behaviour")))
               for name in names]
    code = (f"import importlib, json; [importlib.import_module(m) for m in {modules!r}]; "
            "from grader.checks import checks_for; from grader.exercises.attention import EXERCISE; "
            "print(json.dumps([c.id for c in checks_for(exercise=EXERCISE)]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == DECLARED


def test_a_check_left_out_of_order_stops_the_grader(monkeypatch):
    package = importlib.import_module("grader.checks.sdpa")
    monkeypatch.setattr(package, "ORDER", package.ORDER[:-1])
    with pytest.raises(RuntimeError, match="sdpa.rules"):
        checks_for(exercise=EXERCISE)
