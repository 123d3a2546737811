"""Does the students' self-check (`pytest exercises/<name>`) pass on the solution and fail on the stubs?

Each exercise's folder is run alone, as docs/students.md says: each holds its own `selfcheck.py`."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.e2e

COUNTS = {"attention": (9, 7), "kv_cache": (14, 11)}
"""exercise -> (its checks, the ones its untouched stubs fail: all but the rules checks, one per part)."""


def run_self_check(exercise: str, impl: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, f"{exercise.upper()}_IMPL": str(impl)}
    return subprocess.run([sys.executable, "-m", "pytest", f"exercises/{exercise}", "-q", "-p", "no:cacheprovider",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("exercise", COUNTS)
def test_self_check_passes_on_the_reference_solution(exercise):
    result = run_self_check(exercise, ROOT / "solutions" / exercise / f"{exercise}.py")
    assert result.returncode == 0, result.stdout[-3000:]
    assert f"{COUNTS[exercise][0]} passed" in result.stdout
    assert "expected to fail" not in result.stdout


@pytest.mark.parametrize("exercise", COUNTS)
def test_self_check_fails_on_the_untouched_stubs_and_says_why(exercise):
    result = run_self_check(exercise, ROOT / "exercises" / exercise / f"{exercise}.py")
    failed = COUNTS[exercise][1]
    assert result.returncode == 1, result.stdout[-3000:]
    assert f"{failed} failed" in result.stdout
    assert "[not-implemented]" in result.stdout and "未完成实现" in result.stdout
    # Counted in the failure sections only: pytest's short summary repeats each message's head, cut to the
    # terminal's width, or whole where CI is set in the environment (as on our CI).
    failures = result.stdout.split("short test summary info")[0]
    assert failures.count("Replace the TODO's NotImplementedError line") == 1, "explained once, not per check"
    # the stubs' failures are the work still to do: said at the end, just above pytest's count
    assert result.stdout.splitlines()[-3:-1] == [
        f"{failed} 项检查失败是因为还有 raise NotImplementedError() 没有替换：没做完的部分不会通过，这是正常的。",
        f"{failed} check(s) failed on a raise NotImplementedError() still in place: checks of parts not done yet are "
        "expected to fail."], result.stdout[-1500:]


def test_a_finished_submission_that_fails_gets_no_word_of_unfinished_parts():
    result = run_self_check("attention", ROOT / "tests" / "submissions" / "mutants" / "missing-scale.py")
    assert result.returncode == 1 and "[missing-scale]" in result.stdout, result.stdout[-3000:]
    assert "NotImplementedError() still in place" not in result.stdout


@pytest.mark.parametrize("exercise, selected", [("attention", "4 passed, 5 deselected"),
                                                ("kv_cache", "4 passed, 10 deselected")])
def test_part_markers_select_one_part(exercise, selected):
    result = run_self_check(exercise, ROOT / "solutions" / exercise / f"{exercise}.py", "-m", "part1")
    assert selected in result.stdout, result.stdout[-2000:]
