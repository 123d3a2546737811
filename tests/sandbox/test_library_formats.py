"""Does a library that formats the student's template read a stand-in's truth past the guard?

`"{0.is_meta}".format(Q)` in student code is read through the guard; handed to logging's `{` style or to
`collections.UserString.format`, the same template used to be looked up by `str.format` in C, past every guard:
`logging.Formatter("{q.device.type}{q.is_meta}", style="{")` said `metaTrue` on the stand-in where a GPU says
`cudaFalse` (grader/sandbox/library_formats.py). The list below is every `.format`/`.format_map` call on a
template that is not a literal in the standard modules student code may import: a new one (another Python) shows
here. Patching logging changes this process, so the worker's side runs in a process of its own.
"""
import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.sandbox

FORMATTING_PROCESS = r'''
import json
import torch
from grader.sandbox import library_formats, worker
from grader.sandbox.guard import Guard

guard = Guard()
library_formats.install(guard)
source = """import collections
import logging

DEVICE = logging.Formatter("{q.device.type}{q.is_meta}", style="{")
HONEST = logging.Formatter("{levelname}: {message} ({n:.2f})", style="{")


def read(x):
    record = logging.makeLogRecord({"msg": "", "q": x})
    return [DEVICE.format(record), collections.UserString("{0.is_meta}").format(x),
            collections.UserString("{a.device.type}").format_map({"a": x})]


def honest():
    record = logging.makeLogRecord({"msg": "scores ready", "levelname": "INFO", "n": 0.5})
    return [HONEST.format(record), collections.UserString("{0}-{1}").format(1, 2)]
"""
namespace, errors = worker.load_student(source, guard)
print(json.dumps({"errors": errors, "meta": namespace["read"](torch.empty(2, device="meta")),
                  "honest": namespace["honest"]()}))
'''

OWN_TEMPLATES = {"functools.py": 2, "warnings.py": 1, "logging/__init__.py": 4}
"""`.format` calls whose template is the module's own (a repr, a deprecation message, `Formatter.format(record)` and `Handler.format`,
which is the method, not str.format); the callers of a caller's template are guarded and counted apart."""
CALLERS_OF_A_CALLERS_TEMPLATE = {"logging/__init__.py": 1, "collections/__init__.py": 2}
MODULES = ("functools.py", "warnings.py", "logging/__init__.py", "collections/__init__.py", "typing.py",
           "dataclasses.py", "contextlib.py", "copy.py", "enum.py", "abc.py", "numbers.py", "operator.py")


def test_a_template_formatted_by_a_library_reads_through_the_guard():
    done = subprocess.run([sys.executable, "-c", FORMATTING_PROCESS], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results["errors"] == []
    assert results["meta"] == ["cudaFalse", "False", "cuda"]  # as a GPU's tensor reads
    assert results["honest"] == ["INFO: scores ready (0.50)", "1-2"]


def test_every_standard_library_call_that_formats_a_callers_template_is_known():
    library = Path(sysconfig.get_paths()["stdlib"])
    calls = re.compile(r"(?<![\"'])\.format(_map)?\(")
    found = {}
    for module in MODULES:
        lines = (library / module).read_text().splitlines()
        count = sum(1 for line in lines if calls.search(line) and not line.lstrip().startswith("#"))
        if count:
            found[module] = count
    expected = dict(OWN_TEMPLATES)
    for module, count in CALLERS_OF_A_CALLERS_TEMPLATE.items():
        expected[module] = expected.get(module, 0) + count
    assert found == expected
