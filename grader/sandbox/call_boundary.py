"""On whose behalf the worker acts: from the moment the worker calls into student code for a probe until that call
returns, everything that happens is the student's doing, whatever frame carried it there.

A frame of the submission on the stack proves nothing either way. C callables carry a call with no Python frame of
their own (a forward pre-hook made of `functools.partial` and `numpy.fromfile` runs from torch's
`Module._call_impl`), and the standard library relays one (`contextlib.ExitStack().callback(torch.cuda.xxx)`): the
code that raises an audit event or asks torch.cuda is then torch's or the standard library's, acting for the
student. The worker marks the boundary instead (`students_call`, around each probe); the audit hook
(`grader/sandbox/audit.py`) and the stand-in's torch.cuda (`grader/sandbox/stand_in_cuda.py`) read it. The
grader's own bookkeeping inside a call, where it must act as itself (the stand-in setting its trace hook), runs in
`graders_own`. Loading the submission needs no mark: its own top-level frames lie under all it does.
"""
from __future__ import annotations

import contextlib

_for_the_student = False


def on_the_students_behalf() -> bool:
    return _for_the_student


@contextlib.contextmanager
def _acting(for_the_student: bool):
    global _for_the_student
    before, _for_the_student = _for_the_student, for_the_student
    try:
        yield
    finally:
        _for_the_student = before


def students_call():
    """Everything until the block ends is on the student's behalf: what it calls, and what calls it back."""
    return _acting(True)


def graders_own():
    """The grader's own step inside a student's call: no student code runs in it."""
    return _acting(False)
