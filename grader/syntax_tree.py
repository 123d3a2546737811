"""`ast.parse` for a process that grades in several threads at once (grade-all --jobs N).

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state: two threads
converting a tree at the same time (one can be switched out mid-conversion by a garbage collection)
raise "SystemError: AST constructor recursion depth mismatch" (python/cpython gh-106905 and its
reports). One lock around the conversion serialises milliseconds of work per submission.
"""
from __future__ import annotations

import ast
import threading

_CONVERSION = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _CONVERSION:
        return ast.parse(source, filename)
