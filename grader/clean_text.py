"""Make text that came from a hand-in (exception messages, code lines, file names) safe to print.

A terminal obeys control characters: ESC sequences clear the screen, retitle the window or paint a
fake green "Score: 20 / 20"; `\r` overwrites a line; bidirectional overrides reorder what a reader
sees. Every such character is written as a visible escape (`\x1b`, `\r`, `\u202e`) before text
reaches a terminal, a log or a page. Line breaks are kept where the caller says so; tabs always.
"""
from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every control character but tab (and newline, unless told) written as an escape."""
    return (_CONTROL if keep_newlines else _CONTROL_OR_NEWLINE).sub(_escape, str(text))
