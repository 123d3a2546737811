"""The grading rules switched off, for the tests of what must hold without them.

The grading rules (the static pass grader/rules/__init__.py, the worker's run-time guards) refuse most hostile
code. The sandbox must hold on its own when a trick gets past them, so the sandbox's hostile tests grade
with both off: in the test process through conftest's `rules_bypassed` fixture, in a child process through
this command line (which also drops the session's report cache: its key does not hold these switches).
conftest's `static_rules_off` keeps the run-time guards: what they hold alone.
"""
import sys

from grader.process import REPORT_CACHE_ENV

BYPASS_RULES = ("import os, grader.rules; grader.rules.violations = lambda source, exercise: []; "
                "import grader.sandbox.worker_process; grader.sandbox.worker_process.RUNTIME_GUARDS = False; "
                f"os.environ.pop({REPORT_CACHE_ENV!r}, None)")


def grader_without_rules(setup: str = "") -> list[str]:
    """The grader's command line with the rules off (BYPASS_RULES), after `setup` (Python statements)."""
    return [sys.executable, "-c", f"{BYPASS_RULES}; {setup + '; ' if setup else ''}"
            "import runpy; runpy.run_module('grader', run_name='__main__')"]


GRADER_WITHOUT_RULES = grader_without_rules()
