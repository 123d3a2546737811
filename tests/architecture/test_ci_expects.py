"""Does a CI run that declares a capability (ATTENTION_KIT_CI_EXPECTS, set by .ci/run) fail, naming it, where a
test would otherwise skip for its absence, while a run that declares nothing still skips?"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from support.capabilities import CI_EXPECTS_ENV, expected_capabilities, lacking

from support.paths import ROOT

pytestmark = pytest.mark.unit


def ending(capability: str, reason: str) -> BaseException:
    """How `lacking` ends a test: pytest's skip or its failure (caught here, so neither ends this test)."""
    try:
        lacking(capability, reason)
    except (pytest.skip.Exception, pytest.fail.Exception) as ended:
        return ended
    raise AssertionError("lacking() returned")


def test_without_the_variable_a_missing_capability_skips(monkeypatch):
    monkeypatch.delenv(CI_EXPECTS_ENV, raising=False)
    ended = ending("chromium", "no browser")
    assert isinstance(ended, pytest.skip.Exception) and str(ended) == "needs chromium: no browser"


def test_a_missing_capability_ci_expects_fails_and_is_named(monkeypatch):
    monkeypatch.setenv(CI_EXPECTS_ENV, "root, chromium")
    ended = ending("chromium", "no browser")
    assert isinstance(ended, pytest.fail.Exception), repr(ended)
    assert str(ended) == f"{CI_EXPECTS_ENV} expects chromium, and it is missing here: no browser"


def test_a_capability_ci_does_not_expect_still_skips(monkeypatch):
    monkeypatch.setenv(CI_EXPECTS_ENV, "root,cgroup")
    assert isinstance(ending("postgresql", "not installed"), pytest.skip.Exception)


def test_a_misspelt_capability_is_a_usage_error(monkeypatch):
    monkeypatch.setenv(CI_EXPECTS_ENV, "root,chrome")
    with pytest.raises(pytest.UsageError, match="names chrome"):
        expected_capabilities()


def test_ci_declares_every_capability_the_suite_skips_for():
    """.ci/run sets the variable to the four, and still runs README's test command."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"export {CI_EXPECTS_ENV}=root,cgroup,chromium,postgresql\n" in script
    assert script.rstrip().endswith("\nmake test")


SKIP_CALL = re.compile(r"pytest\.skip\(|skipif\(")
CAPABILITY_CHECK = re.compile(r"geteuid|chromium|postgres|cgroup", re.IGNORECASE)


def test_every_capability_skip_goes_through_lacking():
    """A plain skip or skipif on root, Chromium, PostgreSQL or a cgroup would stay a skip in CI: none is left."""
    plain = [f"{path.name}:{number}" for path in sorted((ROOT / "tests").glob("*.py")) if path.name != "conftest.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if SKIP_CALL.search(line) and CAPABILITY_CHECK.search(line)]
    assert not plain, f"use conftest's lacking() or needs_root(): {plain}"


@pytest.mark.e2e  # a pytest of its own: seconds of imports, too slow for the unit tier
def test_with_chromium_hidden_the_browser_test_fails_and_names_it(tmp_path):
    """The browser test itself, in a pytest of its own, with Chromium's folders left off PATH (where there is no
    Chromium at all, the same run shows the same)."""
    hidden_path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                  if p and not any(os.path.exists(os.path.join(p, name))
                                                   for name in ("chromium", "chromium-browser")))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           "tests/nbgrader_plugins/test_nbgrader_feedback_browser.py::test_the_student_sees_score_and_diagnosis"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": hidden_path, CI_EXPECTS_ENV: "chromium"})
    assert done.returncode == 1, done.stdout[-3000:]
    assert f"{CI_EXPECTS_ENV} expects chromium, and it is missing here" in done.stdout, done.stdout[-3000:]


AS_ANOTHER_USER = ("import os, sys, pytest; os.geteuid = lambda: 65534; "
                   "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '0', 'tests/sandbox/test_memory_cgroup.py']))")


@pytest.mark.e2e  # a pytest of its own
def test_a_root_only_file_run_without_root_fails_where_ci_expects_root():
    """`needs_root` (a module's mark) goes through the same rule: here as a uid that is not root."""
    done = subprocess.run([sys.executable, "-c", AS_ANOTHER_USER], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, CI_EXPECTS_ENV: "root"})
    assert done.returncode == 1 and f"{CI_EXPECTS_ENV} expects root" in done.stdout, done.stdout[-3000:]
