"""Whose behalf the worker acts on: from the moment the grader calls into student code until that call returns,
everything that happens is the student's doing, whoever the immediate caller is.

A Python frame of the submission on the stack is no proof either way: C callables carry a call with no frame of
their own (`functools.partial` as a forward hook, `map`, a bound method of a builtin), and the standard library
relays one (`contextlib.ExitStack.callback`, `atexit`-like trampolines), so the code that raises an event or asks
torch.cuda may be torch's or the standard library's, called on the student's behalf. The worker marks the call
boundary instead: `students_call` around each probe (every call the grader makes into student code: building the
module, its hooks and `__getattr__`, forward), and the grader's own bookkeeping inside it, where it must act as
itself, in `graders_own`. Loading the submission needs no mark: its own top-level frame lies under all it does.
"""
from __future__ import annotations

import contextlib

_on_the_students_behalf = False


def on_the_students_behalf() -> bool:
    return _on_the_students_behalf


@contextlib.contextmanager
def _acting_for(student: bool):
    global _on_the_students_behalf
    before, _on_the_students_behalf = _on_the_students_behalf, student
    try:
        yield
    finally:
        _on_the_students_behalf = before


def students_call():
    """Everything until the block ends is on the student's behalf (what it calls, what calls it back)."""
    return _acting_for(True)


def graders_own():
    """The grader's own bookkeeping inside a student call: it acts as itself (no student code runs there)."""
    return _acting_for(False)
