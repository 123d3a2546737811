"""Does a grading process keep the garbage collector off the objects its imports made? torch alone makes about
170 k; a full collection that walks them cost the parent about 0.1 s of CPU once every grading or two."""
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.unit


def test_after_the_freeze_a_full_collection_costs_a_fraction_of_one_before():
    code = """
import gc, time, torch
from grader.checks import checks_for
from grader.process import freeze_imported_objects
from grader.exercises.attention import EXERCISE
checks_for(exercise=EXERCISE)

def full_collection() -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        gc.collect()
        best = min(best, time.process_time() - started)
    return best

before = full_collection()
freeze_imported_objects()
print(gc.get_freeze_count(), full_collection() / before)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    frozen, ratio = done.stdout.split()
    assert int(frozen) > 100_000
    assert float(ratio) < 0.2
