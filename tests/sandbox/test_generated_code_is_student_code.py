"""Is code generated from a student's strings held to the student's rules, whoever calls it?

dataclasses writes a class's methods as text from its field names and runs them with exec; a class made with
`type()` takes any string for a field name, so a name can carry code. That code runs later, and the grader's own
code may be what calls it (torch hashes a module, the probes build ModelArgs): then no frame of the submission is
on the stack. The audit hook (grader/sandbox/audit.py) counts every code object run from a string outside an
import as student code: each payload below is refused as the same call written in the submission is, whether
student code or the grader's calls the generated method; honest generated code (a dataclass, a NamedTuple) runs.
An audit hook cannot be removed, so this runs in a process of its own.
"""
import json
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.sandbox

MODULES = "__init__.__globals__['dataclasses'].sys.modules"
"""Generated code reads attributes past the guard: a student function's globals lead to every imported module."""
PAYLOADS = {
    "a walk of every object": f"{MODULES}['gc'].get_objects()",
    "ctypes": f"{MODULES}['ctypes'].CDLL(None)",
    "open through the builtins": "__class__,open('/etc/hostname').read()",
    "open through io": f"{MODULES}['io'].open('/etc/hostname').read()",
    "a folder's listing": f"{MODULES}['os'].listdir('/')",
    "an import": "__class__,__import__('os').listdir('/')",
}

GENERATED_PROCESS = r'''
import json, sys
from grader.sandbox import audit, worker
from grader.sandbox.guard import Guard

payloads = json.loads(sys.argv[1])
guard = Guard()
audit.install(guard.refuse)
source = """import dataclasses
import typing


def from_student(obj):
    return hash(obj)


@dataclasses.dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4


class Pair(typing.NamedTuple):
    first: int
    second: int = 2

"""
for index, payload in enumerate(payloads.values()):
    # the field name is read as `(self.<name>,)` in the generated __hash__: the payload runs in it
    name = payload
    source += (f"Made{index} = dataclasses.dataclass(init=False, repr=False, eq=False, unsafe_hash=True)("
               f"type('Made', (), {{'__init__': lambda self: None, '__annotations__': {{{name!r}: int}}}}))\n")
namespace, errors = worker.load_student(source, guard)
results = {"load_errors": errors}
for index, what in enumerate(payloads):
    made = namespace[f"Made{index}"]()
    for caller, call in (("student", namespace["from_student"]), ("grader", hash)):
        try:
            call(made)
            results[f"{what}, called by the {caller}"] = "ran"
        except PermissionError:
            results[f"{what}, called by the {caller}"] = "refused"
        except Exception as error:  # the payload ran and its result failed after (a list is unhashable)
            results[f"{what}, called by the {caller}"] = f"ran ({type(error).__name__})"
args, pair = namespace["ModelArgs"](dim=32), namespace["Pair"](1)
results["honest"] = [args.dim, args.n_heads, hash(args.__class__) != 0, pair.first + pair.second]
results["refused"] = guard.seen()
print(json.dumps(results))
'''


def test_code_generated_from_a_students_strings_is_refused_as_the_students_own():
    done = subprocess.run([sys.executable, "-c", GENERATED_PROCESS, json.dumps(PAYLOADS)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results.pop("load_errors") == [] and results.pop("honest") == [32, 4, True, 3], results
    refused = results.pop("refused")
    assert results == {f"{what}, called by the {caller}": "refused" for what in PAYLOADS
                       for caller in ("student", "grader")}, results
    for operation in ("gc.get_objects", "ctypes.dlopen", "os.listdir", "operation open", "the name __import__"):
        assert any(operation in line for line in refused), (operation, refused)
