"""Are the exercises' declarations all loaded with `grader.exercises`, so that a process that can no longer import
(a grading worker after its confinement) still reads every one?"""
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.unit

NO_MORE_IMPORTS = """
import sys
import grader.exercises as declared
sys.meta_path.clear()  # from here on, as in a confined worker, no module can be imported
sys.path_importer_cache.clear()
sys.path[:] = []
print(sorted(each.name for each in declared.exercises()), declared.exercise("kv_cache").max_score)
"""


def test_every_declaration_is_read_without_importing_after_the_package_loaded():
    done = subprocess.run([sys.executable, "-c", NO_MORE_IMPORTS], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["['attention',", "'kv_cache']", "20.0"]


@pytest.mark.sandbox
def test_an_honest_attention_hand_in_is_graded_in_full_with_two_exercises_declared(graded):
    """The failure this prevents: the worker read the declarations after its confinement, the lazy import of the
    second exercise ended it, and an honest hand-in scored 0 as `tampering`."""
    report = graded(ROOT / "solutions" / "attention" / "attention.py")
    assert report["score"] == report["max_score"] == 20.0 and report["mistakes"] == [], report["mistakes"]
