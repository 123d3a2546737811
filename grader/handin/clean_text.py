"""Make text that came from a hand-in (exception messages, code lines, file names) safe to print.

A terminal obeys control characters: ESC sequences clear the screen, retitle the window or paint a
fake green "Score: 20 / 20"; `\r` overwrites a line; bidirectional overrides reorder what a reader
sees. Every such character, and every lone surrogate (which no writer can encode), is written as a
visible escape (`\x1b`, `\r`, `\u202e`, `\udcff`) before text reaches a terminal, a file, a log or a page.
Line breaks are kept where the caller says so; tabs always.
"""
from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# a lone surrogate ("\udc80" in an exception message, "\udcff" for the byte 0xff of a file name) is no
# character at all: no UTF-8 writer can encode it, and one in a report failed the whole class's JSON file
_SURROGATES = "\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")


def _escape(match: re.Match) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every control character but tab (and newline, unless told) written as an escape."""
    return (_CONTROL if keep_newlines else _CONTROL_OR_NEWLINE).sub(_escape, str(text))


def printable_data(value):
    """Every string in a JSON-like value (keys too) made printable, line breaks kept: for a writer of reports
    whose fields (a file name, a student id) came from a hand-in."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(str(key)): printable_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_data(item) for item in value]
    return value
