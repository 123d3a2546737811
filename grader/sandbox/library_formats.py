"""The standard library's own `str.format` calls on a caller's template, made through the guard's formatter.

`"{0.device}".format(Q)` in student code is guarded (guard._GuardedFormat): its field lookups are attribute reads
through the guard. The same template handed to a library that calls `str.format` itself would be looked up in C,
past every guard (`{q.is_meta}`, `{q.device.type}` read the stand-in's truth). Of the modules student code may
import, two format a caller's template: logging's `{` style (`logging.Formatter(fmt, style="{")`) and
`collections.UserString.format`/`format_map`; in the worker both go through the guard's formatter, whoever calls
them. tests/sandbox/test_library_formats.py lists the standard modules' `.format` calls, so a new one shows.
"""
from __future__ import annotations

import collections
import logging

from grader.sandbox.guard import Guard, _GuardedFormat


def install(guard: Guard) -> None:
    def logging_brace_style(style, record):
        return _GuardedFormat(guard, style._fmt, "format")(**((style._defaults or {}) | record.__dict__))

    def user_string_format(text, *args, **kwargs):
        return _GuardedFormat(guard, text.data, "format")(*args, **kwargs)

    def user_string_format_map(text, mapping):
        return _GuardedFormat(guard, text.data, "format_map")(mapping)

    logging.StrFormatStyle._format = logging_brace_style
    collections.UserString.format = user_string_format
    collections.UserString.format_map = user_string_format_map
