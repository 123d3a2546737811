"""Is code generated from a student's strings held to the student's rules, whoever calls it?

dataclasses writes a class's methods as text from its field names and runs them with exec; a field name given as a
string can carry code, and even plain names give methods that read attributes of whatever `self` they are called
with. That code runs later, and the grader's own code may be what calls it (torch hashes a module, the probes build
ModelArgs): then no frame of the submission is on the stack. In the worker the text goes through the guards'
rewrite (grader/sandbox/generated_code.py) and its code counts as student code for the audit hook
(grader/sandbox/audit.py): each payload below is refused as the same call written in the submission is, whether
student code or the grader's calls the generated method; honest generated code (a dataclass, a frozen one, a
NamedTuple) runs. A class made from data (3-argument `type()` under any name, a metaclass reached through
`__class__`, `dataclasses.make_dataclass`) is refused when it is called. An audit hook cannot be removed, so this
runs in a process of its own.
"""
import json
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.sandbox

MODULES = "__init__.__globals__['dataclasses'].sys.modules"
"""Generated code read attributes past the guard: a student function's globals led to every imported module."""
PAYLOADS = {
    "a walk of every object": f"{MODULES}['gc'].get_objects()",
    "ctypes": f"{MODULES}['ctypes'].CDLL(None)",
    "open through the builtins": "__class__,open('/etc/hostname').read()",
    "open through io": f"{MODULES}['io'].open('/etc/hostname').read()",
    "a folder's listing": f"{MODULES}['os'].listdir('/')",
    "an import": "__class__,__import__('os').listdir('/')",
    "the grader's globals": "__class__,__guard_read__.__func__.__globals__['sys']",
    "a stand-in's truth": "__class__,torch.empty(1, device='meta').is_meta or 1/0",
}
AS_ON_A_GPU = {"a stand-in's truth"}
"""Read through the guard, `is_meta` says False (as on a GPU), so `1/0` runs: unguarded, it said True."""
PAST_THE_AUDIT_HOOK = {"the grader's globals": "ran", "a stand-in's truth": "ran"}
"""What the audit hook alone lets generated code do: reading is no audit event (the rewrite holds these)."""
LAYERS = {
    "rewritten": ({}, "Tensor(is_meta=False)", ("the special attribute __globals__", "open()", "the name __import__",
                                                "the name __guard_read__")),
    "audit hook alone": (PAST_THE_AUDIT_HOOK, "Tensor(is_meta=True)",
                         ("gc.get_objects", "ctypes.dlopen", "os.listdir", "operation open", "the name __import__")),
}

GENERATED_PROCESS = r'''
import json, sys
import torch
from grader.sandbox import audit, generated_code, worker
from grader.sandbox.guard import Guard

payloads = json.loads(sys.argv[1])
guard = Guard()
audit.install(guard.refuse)
if sys.argv[2] == "rewritten":
    generated_code.install(guard)
source = """import dataclasses
import typing

import torch


def from_student(obj):
    return hash(obj)


def blank_init(self):
    return None


def decorate(cls):
    return dataclasses.dataclass(init=False, repr=False, eq=False, unsafe_hash=True)(cls)


def read_through(made, obj):
    return made.__repr__(obj)


@dataclasses.dataclass
class ModelArgs:
    dim: int = 64
    n_heads: int = 4


@dataclasses.dataclass(frozen=True)
class Frozen:
    dim: int = 8


@dataclasses.dataclass(eq=False)
class Reader:
    is_meta: bool = False


class Pair(typing.NamedTuple):
    first: int
    second: int = 2


made_from_data = []
for make in (lambda: type("Made", (), {}), lambda: (alias := type)("Made", (), {}),
             lambda: torch.Tensor.__class__("Made", (torch.Tensor,), {}), lambda: type(int)("Made", (), {}),
             lambda: dataclasses.make_dataclass("Made", ["a"])):
    try:
        made_from_data.append(make().__name__)
    except PermissionError:
        made_from_data.append("refused")
"""
namespace, errors = worker.load_student(source, guard)
results = {"load_errors": errors}
for what, payload in payloads.items():
    # a class the student's strings shaped (built here: type() with three arguments is refused in student code);
    # the field name is read as `(self.<name>,)` in the generated __hash__, so the payload runs in it
    shaped = type("Made", (), {"__init__": namespace["blank_init"], "__annotations__": {payload: int}, "__module__": "submission"})
    try:
        made = namespace["decorate"](shaped)()
    except PermissionError:
        results[f"{what}, called by the student"] = results[f"{what}, called by the grader"] = "refused"
        continue
    for caller, call in (("student", namespace["from_student"]), ("grader", hash)):
        try:
            call(made)
            results[f"{what}, called by the {caller}"] = "ran"
        except PermissionError:
            results[f"{what}, called by the {caller}"] = "refused"
        except Exception as error:  # the payload ran and its result failed after (a list is unhashable)
            results[f"{what}, called by the {caller}"] = f"ran ({type(error).__name__})"
args, pair, frozen = namespace["ModelArgs"](dim=32), namespace["Pair"](1), namespace["Frozen"]()
results["honest"] = [args.dim, args.n_heads, hash(args.__class__) != 0, pair.first + pair.second, frozen.dim,
                     repr(frozen), namespace["Reader"]().is_meta]
results["foreign self"] = namespace["read_through"](namespace["Reader"], torch.empty(1, device="meta"))
results["made from data"] = namespace["made_from_data"]
results["refused"] = guard.seen()
print(json.dumps(results))
'''


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_code_generated_from_a_students_strings_is_refused_as_the_students_own(layer):
    """The guards' rewrite of the generated text holds every payload; the audit hook alone still holds what
    reaches the interpreter (each layer is a defence of its own)."""
    ran, foreign_self, operations = LAYERS[layer]
    done = subprocess.run([sys.executable, "-c", GENERATED_PROCESS, json.dumps(PAYLOADS), layer], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results.pop("load_errors") == [], results
    assert results.pop("honest") == [32, 4, True, 3, 8, "Frozen(dim=8)", False], results
    assert results.pop("foreign self") == foreign_self  # read through the guard: as on a GPU
    assert results.pop("made from data") == ["refused"] * 5, results
    refused = results.pop("refused")
    assert results == {f"{what}, called by the {caller}": ran.get(what, "ran (ZeroDivisionError)" if what in AS_ON_A_GPU
                                                                 else "refused")
                       for what in PAYLOADS for caller in ("student", "grader")}, results
    for operation in operations + ("type(name, bases, dict)", "_TensorMeta(name, bases, dict)",
                                   "dataclasses.make_dataclass"):
        assert any(operation in line for line in refused), (operation, refused)
