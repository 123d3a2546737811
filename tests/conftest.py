"""Fixtures and hooks only: the test tiers (docs/developing.md), one report cache for the whole test session
(each submission graded once, in this process and in every subprocess the tests start), the capability
marks, and the rules-off switches. What tests share besides fixtures is in tests/support/."""
import os
import shutil
from pathlib import Path

import pytest

from grader import rules
from grader.grade import grade_submission
from grader.process import put_nbgrader_tools_on_path, single_threaded_torch
from grader.report.text import in_language
from grader.sandbox import worker_process
from support.capabilities import expected_capabilities, lacking
from support.session import MADE_HERE, SESSION_REPORTS, SHARED_FIXTURE_GROUPS

# A test session is an entry point: the Gradebook may run `alembic`, and grading in this process runs torch
# on one thread as the CLI does (with two, every tiny op waits on the other thread: many times slower on a
# busy machine, and the parent's CPU budget counts the spinning).
put_nbgrader_tools_on_path()
single_threaded_torch()

TIERS = ("unit", "sandbox", "e2e")
ENFORCED_RULES = rules.violations


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

@pytest.fixture(scope="session")
def graded():
    """graded(path) -> the JSON report as `grade --json --lang en` prints it; graded once per session,
    whatever the language, through the session's report cache. With the rules switched off (below) the
    cache's key does not hold the switches: such a report is graded afresh once per switch state and kept in
    this process only, and any other patch of the rules grades afresh every time."""
    memo: dict[tuple, dict] = {}

    def grade(path: Path, lang: str = "en") -> dict:
        static = {ENFORCED_RULES: "on", no_static_rules: "off"}.get(rules.violations)
        if static is None:
            return in_language(grade_submission(path), lang)
        key = (str(path), static, worker_process.RUNTIME_GUARDS)
        if key not in memo:
            enforced = static == "on" and worker_process.RUNTIME_GUARDS
            memo[key] = grade_submission(path, cache=SESSION_REPORTS if enforced else None)
        return in_language(memo[key], lang)

    return grade


def no_static_rules(source: str, exercise=None) -> list:
    """The static pass switched off (`static_rules_off`): it finds nothing in any source."""
    return []


@pytest.fixture
def static_rules_off(monkeypatch):
    monkeypatch.setattr(rules, "violations", no_static_rules)


@pytest.fixture
def rules_bypassed(static_rules_off, monkeypatch):
    from grader.sandbox import worker_process

    monkeypatch.setattr(worker_process, "RUNTIME_GUARDS", False)
