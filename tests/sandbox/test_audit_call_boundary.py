"""Is a file read inside a call the worker made into student code refused, whatever frame carried it there?

A forward pre-hook made only of C callables (`functools.partial`, `map`, `numpy.fromfile`) runs from torch's own
`Module._call_impl`: no frame of the submission is on the stack when the file is opened. The worker marks each
probe's call into student code (grader/sandbox/call_boundary.py) and the audit hook (grader/sandbox/audit.py) refuses
there what it refuses at the student's own line. The hook also lets `ast.parse` compile text to a tree (never to code)
under student code, which a logging handler's traceback does to underline the failing part of a line; compiling
text to code stays refused. An audit hook cannot be removed, so this runs in a process of its own.
"""
import json
import subprocess
import sys

import pytest

from support.paths import ROOT, SUBMISSIONS

pytestmark = pytest.mark.sandbox

AUDITED_PROCESS = r'''
import json
from grader.sandbox import audit, call_boundary, worker
from grader.sandbox.guard import Guard, Refused

guard = Guard()
audit.install(guard.refuse)
source = """import functools
import io
import json
import logging

import numpy as np
import torch


class Hooked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.loot = set()
        self.register_forward_pre_hook(functools.partial(
            set.update, self.loot, map(bytes, map(functools.partial(np.fromfile, dtype=np.uint8), ['/etc/hostname']))))

    def forward(self, x):
        return x * 2


def logs_a_failure():
    stream = io.StringIO()
    log = logging.Logger('student')
    log.addHandler(logging.StreamHandler(stream))
    try:
        json.loads('{')
    except ValueError:
        log.exception('the step failed')
    return stream.getvalue()


def compiles_text():
    return eval(compile('1 + 1', '<text>', 'eval'))
"""
namespace, errors = worker.load_student(source, None)
results = {"load_errors": errors}


def attempt(what, call):
    try:
        outcome = call()
        results[what] = "ran, formatted" if isinstance(outcome, str) and "decoder.py" in outcome else outcome
    except Refused:
        results[what] = "refused"
    except Exception as error:
        results[what] = f"failed ({type(error).__name__}: {error})"


def read_by_the_hook():
    """The hook's set.update also meets the module and its inputs (not iterable): what counts is what it read."""
    module = namespace["Hooked"]()
    try:
        module(namespace["torch"].ones(2))
    except TypeError:
        pass
    return "read" if module.loot else "nothing read"


with call_boundary.students_call():
    attempt("pre-hook read, inside the student's call", read_by_the_hook)
attempt("pre-hook read, the grader's own call between probes", read_by_the_hook)
results["refused for the hook"] = guard.seen()
guard.refused.clear()
with call_boundary.students_call():
    attempt("a logging handler's traceback under student code", namespace["logs_a_failure"])
    results["refused after the traceback"] = guard.seen()
    attempt("compile of text to code by student code", namespace["compiles_text"])
results["refused"] = guard.seen()
print(json.dumps(results))
'''


def _run() -> dict:
    done = subprocess.run([sys.executable, "-c", AUDITED_PROCESS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results.pop("load_errors") == [], results
    return results


@pytest.fixture(scope="module")
def audited() -> dict:
    return _run()


def test_a_file_read_by_a_pre_hook_of_c_callables_inside_the_students_call_is_refused(audited):
    assert audited["pre-hook read, inside the student's call"] == "refused", audited
    assert any("operation open" in line for line in audited["refused for the hook"]), audited["refused for the hook"]
    # the same module called by the grader between probes reads the file: the boundary, not a frame, refused it
    assert audited["pre-hook read, the grader's own call between probes"] == "read", audited


def test_a_logging_handlers_traceback_under_student_code_is_not_refused(audited):
    """`traceback` underlines the failing part of a library's line with `ast.parse` (a tree, never code); refused, the
    refusal is swallowed by traceback but counted against the student."""
    assert audited["a logging handler's traceback under student code"] == "ran, formatted", audited
    assert audited["refused after the traceback"] == [], audited["refused after the traceback"]


def test_student_code_compiling_text_to_code_is_still_refused(audited):
    assert audited["compile of text to code by student code"] == "refused", audited
    assert any("operation compile" in line for line in audited["refused"]), audited["refused"]


@pytest.mark.usefixtures("static_rules_off")  # the audit hook alone stands in the way
def test_the_red_teams_pre_hook_read_gains_nothing_over_the_same_read_in_forward(graded):
    report = graded(SUBMISSIONS / "audit" / "file_read_by_a_forward_pre_hook.py")
    twin = graded(SUBMISSIONS / "audit" / "file_read_in_forward.py")
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])
    assert "introspection" in report["mistakes"], report["mistakes"]
    assert all(c["points"] == 0 for c in report["checks"] if c["part"] == "mha"), "the module that read the file"
