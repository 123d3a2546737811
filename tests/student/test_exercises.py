"""Does the students' self-check (`pytest exercises`) pass on the solution and fail on the stubs?"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.e2e



def run_self_check(impl: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "ATTENTION_IMPL": str(impl)}
    return subprocess.run([sys.executable, "-m", "pytest", "exercises", "-q", "-p", "no:cacheprovider"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_self_check_passes_on_the_reference_solution():
    result = run_self_check(ROOT / "solutions" / "attention" / "attention.py")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "9 passed" in result.stdout
    assert "expected to fail" not in result.stdout


def test_self_check_fails_on_the_untouched_stubs_and_says_why():
    result = run_self_check(ROOT / "exercises" / "attention" / "attention.py")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "7 failed" in result.stdout
    assert "[not-implemented]" in result.stdout and "未完成实现" in result.stdout
    # Counted in the failure sections only: pytest's short summary repeats each message's head, cut to the
    # terminal's width, or whole where CI is set in the environment (as on our CI).
    failures = result.stdout.split("short test summary info")[0]
    assert failures.count("Replace the TODO's NotImplementedError line") == 1, "explained once, not per check"
    # the stubs' failures are the work still to do: said at the end, just above pytest's count
    assert result.stdout.splitlines()[-3:-1] == [
        "7 项检查失败是因为还有 raise NotImplementedError() 没有替换：没做完的部分不会通过，这是正常的。",
        "7 check(s) failed on a raise NotImplementedError() still in place: checks of parts not done yet are "
        "expected to fail."], result.stdout[-1500:]


def test_a_finished_submission_that_fails_gets_no_word_of_unfinished_parts():
    result = run_self_check(ROOT / "tests" / "submissions" / "mutants" / "missing-scale.py")
    assert result.returncode == 1 and "[missing-scale]" in result.stdout, result.stdout[-3000:]
    assert "NotImplementedError() still in place" not in result.stdout


def test_part_markers_select_one_part():
    env = {**os.environ, "ATTENTION_IMPL": str(ROOT / "solutions" / "attention" / "attention.py")}
    result = subprocess.run([sys.executable, "-m", "pytest", "exercises", "-q", "-m", "part1", "-p", "no:cacheprovider"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "4 passed, 5 deselected" in result.stdout, result.stdout[-2000:]
