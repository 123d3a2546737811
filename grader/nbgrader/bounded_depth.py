"""A notebook's JSON with everything nested deeper than nbgrader can read cut off, its cells' code kept.

nbformat reads a notebook recursively: metadata nested about 600 levels deep (a student's, or a tool's) raises
`RecursionError` inside `nbgrader autograde`, which then grades no one after it and writes no feedback page; past
about 1,000 levels Python's own JSON reader fails too. An honest notebook nests a dozen levels (widget state,
JSON outputs), its code cells four. So the collector reads each notebook's text once, without recursion, and
when a container opens deeper than `MAX_DEPTH` the whole container is replaced by a string that says so; the
result is graded like any other notebook and the collector names the student in its log.
"""
from __future__ import annotations

import json
import re

MAX_DEPTH = 64
"""Deepest container kept: four times what honest notebooks hold, far below what nbformat can read."""
NOTE = f"[removed by the kit's collector: nested deeper than {MAX_DEPTH} levels]"
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def deep_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every outermost container that opens deeper than MAX_DEPTH; [] for an honest notebook,
    and for text that is no JSON (whose reading fails anyway, with its own message)."""
    depth, spans, start = 0, [], -1
    for token in _TOKEN.finditer(text):
        char = token.group()[0]
        if char in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                start = token.start()
        elif char in "]}":
            if depth == MAX_DEPTH + 1 and start >= 0:
                spans.append((start, token.end()))
                start = -1
            depth -= 1
    if start >= 0:  # unbalanced: not JSON
        return []
    return spans


def bounded(text: str) -> str | None:
    """The notebook's text with its too-deep containers replaced by NOTE, or None when it has none."""
    spans = deep_spans(text)
    if not spans:
        return None
    pieces, end = [], 0
    for start, stop in spans:
        pieces += [text[end:start], json.dumps(NOTE)]
        end = stop
    pieces.append(text[end:])
    return "".join(pieces)
