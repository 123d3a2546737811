"""`ast.parse` for the grader's own process, one thread at a time.

CPython 3.11 keeps the AST constructor's recursion depth in state all threads share (gh-106905): a
thread switch inside `ast.parse` (a garbage collection running a finalizer, say) while another thread
parses makes one of them fail with "SystemError: AST constructor recursion depth mismatch".
`grade-all --jobs N` and its nbgrader pass parse student code in N threads, and such a failure
would cost a student the grade, so every parse of student code in this process goes through here.
"""
from __future__ import annotations

import ast
import threading

_ONE_AT_A_TIME = threading.Lock()


def parse(source: str) -> ast.Module:
    """ast.parse(source), raising what it raises (SyntaxError, RecursionError, ...)."""
    with _ONE_AT_A_TIME:
        return ast.parse(source)
