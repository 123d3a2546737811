"""Blank out the IPython magics and shell escapes of a notebook cell, which are not Python.

A line is a magic only where IPython reads one: at the start of a statement. A `%` that opens a line
inside brackets, a string or after a backslash continues the statement above (`"%d heads"` on one line,
`% (dim, heads))` on the next) and is Python's own operator. Only notebook cells have magics: a .py file
is read as Python, whole.
"""
from __future__ import annotations

import re

_MAGIC_LINE = re.compile(r"^\s*[%!]")
# Cell magics whose body is still Python (`%%time` over the graded cell, say); any other cell
# magic (%%bash, %%writefile, %%html, …) makes the whole cell something else.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_OPENING, _CLOSING = "([{", ")]}"


class _Continuation:
    """Whether the next line continues a statement: open brackets, an open triple-quoted string, or a
    trailing backslash. Reads code line by line, comments and strings included, without parsing it."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the delimiter of the string left open
        self.backslash = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def read(self, line: str) -> None:
        index, end = 0, len(line)
        while index < end:
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                elif line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                else:
                    index += 1
            elif char == "#":
                end = index  # a comment: its backslash continues nothing
            elif char in "'\"":
                self.quote = line[index:index + 3] if line[index:index + 3] in ('"""', "'''") else char
                index += len(self.quote)
            else:
                self.depth += char in _OPENING
                self.depth = max(0, self.depth - (char in _CLOSING))
                index += 1
        self.backslash = line[:end].endswith("\\")
        if self.quote in ("'", '"') and not self.backslash:
            self.quote = None  # an unterminated one-line string ends with its line (a syntax error of its own)


def strip_magics(cell: str) -> str:
    """The cell with each magic line blanked, lines kept in place (so their numbers do not move); a cell magic
    other than PYTHON_CELL_MAGICS blanks the whole cell."""
    stripped = cell.lstrip()
    if stripped.startswith("%%") and stripped[2:].split(maxsplit=1)[:1] and \
            stripped[2:].split(maxsplit=1)[0] not in PYTHON_CELL_MAGICS:
        return ""
    lines, continuation = [], _Continuation()
    for line in cell.splitlines():
        if continuation.at_statement_start() and _MAGIC_LINE.match(line):
            lines.append("")
            continue
        continuation.read(line)
        lines.append(line)
    return "\n".join(lines)
