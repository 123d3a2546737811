"""Shared fixtures: a report cache so each submission is graded once per test session."""
import sys
from pathlib import Path

import pytest

from grader.grade import grade_submission
from grader.process import put_nbgrader_tools_on_path
from grader.report import in_language

put_nbgrader_tools_on_path()  # a test session is an entry point: the Gradebook may run `alembic`

ROOT = Path(__file__).resolve().parent.parent
SUBMISSIONS = Path(__file__).resolve().parent / "submissions"
REFERENCE = ROOT / "solutions" / "attention" / "attention.py"
STUBS = ROOT / "exercises" / "attention" / "attention.py"


@pytest.fixture(scope="session")
def graded():
    """graded(path) -> the JSON report as `grade --json --lang en` prints it; graded once per path, whatever the language."""
    cache: dict[str, dict] = {}

    def grade(path: Path, lang: str = "en") -> dict:
        if str(path) not in cache:
            cache[str(path)] = grade_submission(path)
        return in_language(cache[str(path)], lang)

    return grade


def header(path: Path, key: str) -> str | None:
    """`# key: value` from the first lines of a fixture submission."""
    for line in path.read_text(encoding="utf-8").splitlines()[:5]:
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


# The grading rules (the static pass grader/policy.py, the worker's run-time guards) refuse most hostile
# code. The sandbox must hold on its own when a trick gets past them, so the sandbox's hostile tests grade
# with both off: in this process through `rules_bypassed`, in a child process through this command line.
# `static_rules_off` keeps the run-time guards: what they hold alone.
BYPASS_RULES = ("import grader.policy; grader.policy.violations = lambda source: []; "
                "import grader.sandbox.worker_process; grader.sandbox.worker_process.RUNTIME_GUARDS = False")
GRADER_WITHOUT_RULES = [sys.executable, "-c", f"{BYPASS_RULES}; import runpy; runpy.run_module('grader', run_name='__main__')"]


@pytest.fixture
def static_rules_off(monkeypatch):
    from grader import policy

    monkeypatch.setattr(policy, "violations", lambda source: [])


@pytest.fixture
def rules_bypassed(static_rules_off, monkeypatch):
    from grader.sandbox import worker_process

    monkeypatch.setattr(worker_process, "RUNTIME_GUARDS", False)
