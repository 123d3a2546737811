"""Shared fixtures: one report cache for the whole test session (each submission graded once, in this
process and in every subprocess the tests start), and the test tiers (README, *Developing*)."""
import gc
import hashlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import pytest

from grader import rules
from grader.grade import default_limits, grade_submission
from grader.process import PROBE_SECONDS_ENV, REPORT_CACHE_ENV, put_nbgrader_tools_on_path, single_threaded_torch
from grader.report.text import in_language
from grader.sandbox import worker_process
from grader.sandbox.confinement import Limits

# A test session is an entry point: the Gradebook may run `alembic`, and grading in this process runs torch
# on one thread as the CLI does (with two, every tiny op waits on the other thread: many times slower on a
# busy machine, and the parent's CPU budget counts the spinning).
put_nbgrader_tools_on_path()
single_threaded_torch()

TIERS = ("unit", "sandbox", "e2e")
ENFORCED_RULES = rules.violations
# One folder of reports for the session, shared with every `grader`/nbgrader subprocess through the
# environment (the entry points read REPORT_CACHE_ENV). Its key holds everything that changes a verdict
# (grader.report.cache); a test that must grade afresh removes the variable (monkeypatch.delenv).
# The session that makes the folder names it in SESSION_REPORTS_ENV; pytest-xdist's workers (started by
# it, with its environment) and any pytest a test starts use that folder too and leave it to its maker
# (the cache writes atomically, so parallel workers share it).
SESSION_REPORTS_ENV = "ATTENTION_KIT_TEST_SESSION_REPORTS"
MADE_HERE = SESSION_REPORTS_ENV not in os.environ
SESSION_REPORTS = Path(os.environ.get(SESSION_REPORTS_ENV) or tempfile.mkdtemp(prefix="attention-kit-test-reports-"))
os.environ[SESSION_REPORTS_ENV] = os.environ[REPORT_CACHE_ENV] = str(SESSION_REPORTS)


# Every grading of the session, here and in the subprocesses tests start, gives one probe call 3 s instead of 10:
# the timeout fixtures (an endless loop) wait the limit out, and it is the limit they test. The margin, from
# benchmarks/probe_times.py beside two busy loops: honest and mutant calls at most 0.10 s, 30 times under it.
# The 3 GiB memory bomb's calls took up to 1.94 s there: under the default limits it may end in memory-limit or,
# on a slower machine, in timeout, and no test holds which (those that name its memory-limit grade it with
# 512 MiB). Tests that set their own Limits keep them.
SESSION_PROBE_SECONDS = "3"
os.environ[PROBE_SECONDS_ENV] = SESSION_PROBE_SECONDS


# CI declares the capabilities it provides (.ci/run): with ATTENTION_KIT_CI_EXPECTS=root,cgroup,chromium,postgresql,
# a test that would skip for one of those, missing, fails instead and names it, so a CI machine that lost one is
# red, not green with fewer tests. Without the variable (a contributor's laptop) such a test skips, listed by -ra.
# Every skip for a capability goes through `lacking` (or the `needs_root` mark, which calls it).
CI_EXPECTS_ENV = "ATTENTION_KIT_CI_EXPECTS"
CAPABILITIES = ("root", "cgroup", "chromium", "postgresql")


def expected_capabilities() -> set[str]:
    named = {name.strip() for name in os.environ.get(CI_EXPECTS_ENV, "").split(",") if name.strip()}
    unknown = named - set(CAPABILITIES)
    if unknown:
        raise pytest.UsageError(f"{CI_EXPECTS_ENV} names {', '.join(sorted(unknown))}: "
                                f"the capabilities are {', '.join(CAPABILITIES)}")
    return named


def lacking(capability: str, reason: str) -> NoReturn:
    """This test cannot run without `capability`: it skips, or fails where CI expects the capability."""
    assert capability in CAPABILITIES, capability
    if capability in expected_capabilities():
        pytest.fail(f"{CI_EXPECTS_ENV} expects {capability}, and it is missing here: {reason}", pytrace=False)
    pytest.skip(f"needs {capability}: {reason}")


def needs_root(reason: str) -> pytest.MarkDecorator:
    """A test (or, as `pytestmark`, a module) that runs only as root: skipped, or failed where CI expects root."""
    return pytest.mark.needs_root(reason=reason)


def pytest_configure(config):
    config.addinivalue_line("markers", "needs_root(reason): runs only as root (tests/conftest.py, `lacking`)")
    expected_capabilities()  # a misspelt capability stops the run before any test


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    for mark in item.iter_markers("needs_root"):
        if os.geteuid() != 0:
            lacking("root", mark.kwargs["reason"])


def pytest_unconfigure(config):
    if MADE_HERE:
        shutil.rmtree(SESSION_REPORTS, ignore_errors=True)


def tier(item: pytest.Item) -> str | None:
    """The item's tier: the closest tier marker (a test's own marker overrides its module's)."""
    return next((mark.name for mark in item.iter_markers() if mark.name in TIERS), None)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: it must see each test's one tier
def pytest_collection_modifyitems(config, items):
    tests = [item for item in items if isinstance(item, pytest.Function)]
    untiered = [item.nodeid for item in tests if tier(item) is None]
    if untiered:
        raise pytest.UsageError("tests without a tier marker (unit, sandbox or e2e; README *Developing*):\n  "
                                + "\n  ".join(untiered))
    closest = {item: tier(item) for item in tests}
    for item in tests:  # the tier becomes the test's own marker, and its module's or class's default goes
        for node in item.listchain()[:-1]:
            node.own_markers[:] = [mark for mark in node.own_markers if mark.name not in TIERS]
        if not any(mark.name == closest[item] for mark in item.own_markers):
            item.add_marker(closest[item])


# Files that share a session fixture too costly to build twice (a class of notebooks through nbgrader's
# zip_collect, autograde and generate_feedback: about a minute of CPU): `make test`'s `--dist loadfile`
# hands each group to one xdist worker, as it hands each other file.
SHARED_FIXTURE_GROUPS = {
    "tests/test_nbgrader_colab.py": "nbgrader_course.shared_class",
    "tests/test_nbgrader_feedback_browser.py": "nbgrader_course.shared_class",
    "tests/test_nbgrader_release_solutions.py": "nbgrader_course.shared_class",
}


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # without xdist (-p no:xdist) the hook does not exist
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileOrSharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return SHARED_FIXTURE_GROUPS.get(path, path)

    return FileOrSharedFixtureScheduling(config, log)


@pytest.fixture(autouse=True)
def unit_tier_starts_no_sandbox(request, monkeypatch):
    """A `unit` test that starts a grading worker is in the wrong tier: it fails, whatever the grading
    code around the start made of the refusal."""
    if not isinstance(request.node, pytest.Function) or tier(request.node) != "unit":
        yield
        return
    started = []

    def refuse(self, *args, **kwargs):
        started.append(True)
        raise RuntimeError("a unit-tier test started a sandbox worker: mark it `sandbox`")

    monkeypatch.setattr(worker_process.Worker, "__init__", refuse)
    yield
    assert not started, "a unit-tier test started a sandbox worker: mark it `sandbox`"

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
REFERENCE = ROOT / "solutions" / "attention" / "attention.py"
STUBS = ROOT / "exercises" / "attention" / "attention.py"


@pytest.fixture(scope="session")
def graded():
    """graded(path) -> the JSON report as `grade --json --lang en` prints it; graded once per session,
    whatever the language, through the session's report cache. With the rules bypassed (below) it grades
    afresh and keeps nothing: the cache's key does not hold those switches."""
    memo: dict[str, dict] = {}

    def grade(path: Path, lang: str = "en") -> dict:
        if rules.violations is not ENFORCED_RULES or not worker_process.RUNTIME_GUARDS:
            return in_language(grade_submission(path), lang)
        if str(path) not in memo:
            memo[str(path)] = grade_submission(path, cache=SESSION_REPORTS)
        return in_language(memo[str(path)], lang)

    return grade


class CpuTime:
    """This process's CPU time over a `with` block (`.seconds`), with the garbage collector paused: in a test
    worker whose heap holds a session of reports, one full collection inside a timed pass costs about 0.4 s
    (CI saw a linear pass take 0.04 s, then 0.48 s)."""

    def __enter__(self) -> "CpuTime":
        gc.collect()
        gc.disable()
        self.started = time.process_time()
        return self

    def __exit__(self, *exception) -> None:
        self.seconds = time.process_time() - self.started
        gc.enable()


def own_order(paths: list[Path], module: str) -> list[Path]:
    """`paths` in an order of the test module's own. Files that grade every submission through the session's
    cache claim each report while computing it; walked in one shared order, two of them on two xdist workers
    ran in lockstep, one computing and the other waiting on the same report (graders and gradescope: 130 s
    and 169 s for one set of reports). In orders that differ, each mostly finds the other's reports done."""
    return sorted(paths, key=lambda p: hashlib.sha256(f"{module}/{p.parent.name}/{p.name}".encode()).hexdigest())


def short_memory() -> Limits:
    """The default limits with 512 MiB of memory: a hoarding submission trips it at once, not after filling
    gigabytes against the clock (the 3 GiB default took 13 s a grading for the memory bomb)."""
    return Limits(**{**default_limits().__dict__, "memory_bytes": 512 << 20})


def header(path: Path, key: str) -> str | None:
    """`# key: value` from the first lines of a fixture submission."""
    for line in path.read_text(encoding="utf-8").splitlines()[:8]:
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


# The grading rules (the static pass grader/rules/__init__.py, the worker's run-time guards) refuse most hostile
# code. The sandbox must hold on its own when a trick gets past them, so the sandbox's hostile tests grade
# with both off: in this process through `rules_bypassed`, in a child process through this command line
# (which also drops the session's report cache: its key does not hold these switches).
# `static_rules_off` keeps the run-time guards: what they hold alone.
BYPASS_RULES = ("import os, grader.rules; grader.rules.violations = lambda source: []; "
                "import grader.sandbox.worker_process; grader.sandbox.worker_process.RUNTIME_GUARDS = False; "
                f"os.environ.pop({REPORT_CACHE_ENV!r}, None)")


def grader_without_rules(setup: str = "") -> list[str]:
    """The grader's command line with the rules off (BYPASS_RULES), after `setup` (Python statements)."""
    return [sys.executable, "-c", f"{BYPASS_RULES}; {setup + '; ' if setup else ''}"
            "import runpy; runpy.run_module('grader', run_name='__main__')"]


GRADER_WITHOUT_RULES = grader_without_rules()


@pytest.fixture
def static_rules_off(monkeypatch):
    from grader import rules

    monkeypatch.setattr(rules, "violations", lambda source: [])


@pytest.fixture
def rules_bypassed(static_rules_off, monkeypatch):
    from grader.sandbox import worker_process

    monkeypatch.setattr(worker_process, "RUNTIME_GUARDS", False)
