"""Student code's attribute reads, getattr, subscripts, attribute writes and imports, routed through
guards that see the object, however the code spells the name.

The worker compiles each statement of student code through `GuardedAccess` (rewrite.py, an AST rewrite: `a.b`
becomes `__guard_read__(a, "b")`, `a.b = v` becomes `__guard_write__(a, "b").b = v`, `a[k]` becomes
`__guard_item__(a)[k]`) and runs it with `builtins()` in place of Python's own (getattr, setattr,
hasattr, delattr and __import__ guarded; eval, exec, compile, open, globals, vars and breakpoint
refused). The guards refuse what attention code never needs and record each refusal with its
mistake id; the parent reports it (a refusal raises inside student code, so catching it gains nothing).
The allow-list itself is `grader.rules.table` (shared with the static pass and the public self-check).
"""
from __future__ import annotations

import _string
import builtins as python_builtins
import dis
import string
import sys
import types

import torch

from grader.rules.table import (ALLOWED_DUNDERS, ALLOWED_SYS, CLASS_DUNDERS,
                                DENIED_STDLIB_NAMES, FILE_OPENING_METHODS, FORBIDDEN_API,
                                INDIRECT_ACCESS_NAMES, INTERPRETER_ATTRIBUTE, STAND_IN_ATTRIBUTES, WRITABLE_MODULES,
                                denied_attribute_of_torch, module_allowed)
from grader.sandbox.fake_gpu import is_fake, on_a_stand_in
from grader.sandbox.stand_in_devices import FAKE_TENSOR_DEVICES, STAND_IN_DEVICES

STUDENT_MODULE = "submission"
READ, WRITE, ITEM, REFUSE = "__guard_read__", "__guard_write__", "__guard_item__", "__guard_refuse__"
# The meta device stands in for a GPU on a CPU-only host: read through attributes, it says what a GPU says,
# so code that tells the two apart behaves as it would on the GPU (and a mask made on the CPU still fails).
DEVICE_AS_ON_A_GPU = {"type": "cuda", "index": 0}
TENSOR_AS_ON_A_GPU = {"is_cuda": True, "is_meta": False, "device": STAND_IN_DEVICES.read, "get_device": lambda: 0}
"""`device` is read afresh each time (`Guard.read` calls it); `get_device` is the method the code calls."""
STORAGE_AS_ON_A_GPU = {"is_shared": lambda: True, "is_pinned": lambda *args, **kwargs: False}
"""What a tensor's storage says of itself on a GPU (a CUDA storage counts as shared, and is never pinned memory),
on both stand-ins, whose storage is meta: `Q.is_shared()` told them from a GPU."""
MATCH_REFUSED = {*DEVICE_AS_ON_A_GPU, *TENSOR_AS_ON_A_GPU, *STORAGE_AS_ON_A_GPU, *STAND_IN_ATTRIBUTES}
IMPORT_NAME = dis.opmap["IMPORT_NAME"]
INTERPRETER_TYPES = (types.FrameType, types.TracebackType, types.CodeType, types.CellType)


class _GuardedFormat(string.Formatter):
    """`str.format` whose field lookups (`{0.device}`, `{t.is_cuda}`) are attribute reads through the guard, as
    the same text in an f-string would be; without it the lookups happen in C, past every guard."""

    def __init__(self, guard: "Guard", owner, name: str) -> None:
        super().__init__()
        self.guard, self.owner, self.name = guard, owner, name

    def __call__(self, *args, **kwargs):
        if self.owner is str:  # str.format(template, ...)
            template, *args = args
        else:
            template = self.owner
        if self.name == "format_map":
            return self.vformat(template, (), args[0])
        return self.vformat(template, args, kwargs)

    def get_field(self, field_name, args, kwargs):
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self.guard.read(obj, key) if is_attribute else obj[key]
        return obj, first


class Refused(PermissionError):
    """What the grading sandbox refused; a PermissionError, so library code that tolerates one carries on."""


class Guard:
    """The guard functions one submission's code calls, and the record of what they refused."""

    def __init__(self) -> None:
        self.refused: dict[str, str] = {}  # what was seen -> mistake id
        self.class_makers: dict[type, type] = {}

    def refuse(self, mistake: str, seen: str):
        self.refused.setdefault(seen, mistake)
        raise Refused(f"grading sandbox: {seen} is not allowed ({mistake}); see the grading rules")

    def seen(self) -> list[str]:
        """The refusals as "mistake: what" lines, the form the parent reads."""
        return sorted(f"{mistake}: {seen}"[:300] for seen, mistake in self.refused.items())[:20]

    def _reading_refusal(self, obj, name: str) -> tuple[str, str] | None:
        if not isinstance(name, str):
            return None
        if isinstance(obj, Unimported):
            return obj._Unimported__refusal[1], f"import {obj.__name__}"
        if isinstance(obj, types.ModuleType) and not module_allowed(obj.__name__):
            return "forbidden-import", f"{obj.__name__}.{name}"
        if obj is sys and name not in ALLOWED_SYS:
            return "introspection", f"sys.{name}"
        if isinstance(obj, types.ModuleType) and f"{obj.__name__}.{name}" in DENIED_STDLIB_NAMES:
            return "tampering", f"{obj.__name__}.{name}"
        if isinstance(obj, types.ModuleType) and f"{obj.__name__}.{name}" in INDIRECT_ACCESS_NAMES:
            return "introspection", f"{obj.__name__}.{name}"
        if isinstance(obj, INTERPRETER_TYPES) or INTERPRETER_ATTRIBUTE.match(name):
            return "introspection", f"{type(obj).__name__}.{name}"
        if name.startswith("__") and name.endswith("__"):
            if name not in ALLOWED_DUNDERS:
                return "introspection", f"the special attribute {name}"
            return None
        if name in FILE_OPENING_METHODS and _torch_object(obj):
            return "introspection", f"{_owner(obj)}.{name} (opens a file)"
        if FORBIDDEN_API.match(name) and _torch_object(obj):
            return "forbidden-api", f"{_owner(obj)}.{name}"
        if name in STAND_IN_ATTRIBUTES and name not in TENSOR_AS_ON_A_GPU and isinstance(obj, torch.Tensor):
            return "device-probing", f"Tensor.{name}"
        if name.startswith("_") and not _students(obj):
            return ("private-torch" if _torch_object(obj) else "introspection"), f"{_owner(obj)}.{name}"
        if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] == "torch":
            denied = denied_attribute_of_torch(obj.__name__, name)
            if denied:
                return "private-torch", denied
        return None

    def read(self, obj, name):
        if name in ("format", "format_map") and (obj is str or isinstance(obj, str)):
            return _GuardedFormat(self, obj, name)  # "{0.device}".format(Q) reads Q.device through this guard
        refusal = self._reading_refusal(obj, name)
        if refusal:
            self.refuse(*refusal)
        if isinstance(obj, torch.device) and name in DEVICE_AS_ON_A_GPU and obj.type == "meta":
            return DEVICE_AS_ON_A_GPU[name]
        if isinstance(obj, torch.Tensor) and name in TENSOR_AS_ON_A_GPU and obj.is_meta:
            return STAND_IN_DEVICES.read() if name == "device" else TENSOR_AS_ON_A_GPU[name]
        if name in STORAGE_AS_ON_A_GPU and on_a_stand_in(obj):
            return STORAGE_AS_ON_A_GPU[name]
        value = getattr(obj, name)
        if name == "device" and is_fake(obj):
            value = FAKE_TENSOR_DEVICES.read(value)
        if isinstance(value, types.ModuleType) and not module_allowed(value.__name__):
            self.refuse("forbidden-import", f"{_owner(obj)}.{name} (the module {value.__name__})")
        return self.class_maker(value) if _metaclass(value) else value

    def class_maker(self, metaclass: type) -> type:
        """A metaclass as student code holds it (`type`, `x.__class__.__class__`, `abc.ABCMeta`, however it is
        spelt or aliased): calling it makes a class from a name, bases and a dict, past everything a `class`
        statement meets (build_class, the rewrite's special-method and class-body checks), so that call is
        refused when it runs; `type(x)` and isinstance/issubclass answer as the metaclass's own."""
        if metaclass not in self.class_makers:
            guard = self

            class ClassMaker(type):
                def __instancecheck__(cls, obj) -> bool:
                    return isinstance(obj, metaclass)

                def __subclasscheck__(cls, subclass) -> bool:
                    return isinstance(subclass, type) and issubclass(subclass, metaclass)

                def __call__(cls, *args, **kwargs):
                    if metaclass is type and len(args) == 1 and not kwargs:
                        found = type(args[0])
                        return guard.class_maker(found) if _metaclass(found) else found
                    guard.refuse("introspection", f"{metaclass.__name__}(name, bases, dict) makes a class from data")

            self.class_makers[metaclass] = ClassMaker(metaclass.__name__, (), {"__module__": "builtins"})
        return self.class_makers[metaclass]

    def write(self, obj, name):
        """The object a student's statement may set or delete `name` on: its own objects, instances such
        as tensors and layers, torch.backends switches; never modules, classes or functions of others."""
        if name.startswith("__") and name.endswith("__") and not (_students(obj) and name in CLASS_DUNDERS):
            self.refuse("tampering", f"setting the special attribute {name}")
        if _students(obj):
            return obj
        if isinstance(obj, types.ModuleType):
            if not obj.__name__.startswith(WRITABLE_MODULES):
                self.refuse("tampering", f"setting {obj.__name__}.{name}")
        elif isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
            self.refuse("tampering", f"setting {_owner(obj)}.{name}")
        elif name.startswith("_"):
            self.refuse("private-torch" if _torch_object(obj) else "introspection", f"{_owner(obj)}.{name}")
        return obj

    def item(self, obj):
        """A mapping of something else's namespace is never reachable (vars, __dict__ are refused):
        a subscript needs no more than its own result's check."""
        return _ItemGuard(self, obj) if isinstance(obj, (dict, types.MappingProxyType)) else obj

    def getattr_(self, obj, name, *default):
        try:
            return self.read(obj, name)
        except AttributeError:
            if default:
                return default[0]
            raise

    def hasattr_(self, obj, name) -> bool:
        refusal = self._reading_refusal(obj, name)
        if refusal:
            self.refuse(*refusal)
        return hasattr(obj, name)

    def setattr_(self, obj, name, value) -> None:
        setattr(self.write(obj, name), name, value)

    def delattr_(self, obj, name) -> None:
        delattr(self.write(obj, name), name)

    def import_(self, name, globals=None, locals=None, fromlist=(), level=0):
        """An import statement of student code. C code imports through the current frame's builtins too
        (torch's dispatcher, while a student's line is the innermost Python frame): those calls come from
        no IMPORT_NAME instruction, and their module goes to C code, not to the student."""
        caller = sys._getframe(1)
        if caller.f_code.co_code[caller.f_lasti] != IMPORT_NAME:
            if _generated(caller.f_code) and "__import__" in caller.f_code.co_names:
                self.refuse("introspection", "the name __import__")  # as in the submission's own lines
            return __import__(name, globals, locals, fromlist, level)
        if level or not module_allowed(name):
            return Unimported(f"{'.' * level}{name}", _import_mistake(name), self)
        module = __import__(name, globals, locals, fromlist, level)
        if not fromlist or "*" in fromlist:
            return module
        names = {}
        for item in fromlist:
            value = getattr(module, item, None)
            if isinstance(value, types.ModuleType) and not module_allowed(value.__name__):
                value = Unimported(value.__name__, _import_mistake(value.__name__), self)
            elif item.startswith("_") or f"{name}.{item}" in INDIRECT_ACCESS_NAMES:
                value = Unimported(f"{name}.{item}", "private-torch" if name.startswith("torch") else "introspection", self)
            elif f"{name}.{item}" in DENIED_STDLIB_NAMES:
                value = Unimported(f"{name}.{item}", "tampering", self)
            names[item] = value
        return types.SimpleNamespace(**names)

    def build_class(self, body, name, *bases, **keywords):
        for base in bases:
            if isinstance(base, type) and issubclass(base, torch.Tensor):
                self.refuse("tampering", f"class {name} subclasses {base.__name__}")
        return python_builtins.__build_class__(body, name, *bases, **keywords)

    def denied(self, name: str, mistake: str = "introspection"):
        def refuse(*args, **kwargs):
            self.refuse(mistake, f"{name}()")

        return refuse

    def builtins(self) -> dict:
        """Python's builtins as student code sees them."""
        names = dict(vars(python_builtins))
        names.update(getattr=self.getattr_, hasattr=self.hasattr_, setattr=self.setattr_, delattr=self.delattr_,
                     __import__=self.import_, __build_class__=self.build_class, type=self.class_maker(type))
        for name in ("eval", "exec", "compile", "globals", "locals", "vars", "breakpoint", "input", "help"):
            names[name] = self.denied(name)
        for name in ("open", "exit", "quit"):
            names[name] = self.denied(name, "tampering")
        names.pop("copyright", None), names.pop("credits", None), names.pop("license", None)
        return names

    def namespace(self) -> dict:
        """The globals student code runs in."""
        return {"__name__": STUDENT_MODULE, "__builtins__": self.builtins(), READ: self.read, WRITE: self.write,
                ITEM: self.item, REFUSE: self.refuse}


class _ItemGuard:
    """A dict seen through a subscript: a module or a refused builtin never comes out of it."""

    __slots__ = ("_guard", "_mapping")

    def __init__(self, guard: Guard, mapping) -> None:
        self._guard, self._mapping = guard, mapping

    def __getitem__(self, key):
        value = self._mapping[key]
        if isinstance(value, types.ModuleType) and not module_allowed(value.__name__):
            self._guard.refuse("forbidden-import", f"[{key!r}] (the module {value.__name__})")
        return value

    def __setitem__(self, key, value):
        self._mapping[key] = value

    def __delitem__(self, key):
        del self._mapping[key]


def _metaclass(value) -> bool:
    return isinstance(value, type) and issubclass(value, type)


def _generated(code) -> bool:
    """Code compiled from a string at run time (dataclasses' methods, an eval): not a library's file, so the
    submission's strings made it (grader/sandbox/audit.py counts it as student code)."""
    return code.co_filename.startswith("<") and not code.co_filename.startswith("<frozen")


def _import_mistake(name: str) -> str:
    return "private-torch" if name.split(".")[0] == "torch" else "forbidden-import"


class Unimported(types.ModuleType):
    """What a refused import binds: nothing happens until the code uses it, and then the part whose code
    did is the one refused (an unused `import os` costs nothing, as in the static pass)."""

    def __init__(self, name: str, mistake: str, guard: Guard) -> None:
        super().__init__(name)
        self.__refusal = (guard, mistake)

    def __getattr__(self, item):  # `from os import getcwd` reads the attribute before any guard can
        if item.startswith("__") and item.endswith("__"):
            raise AttributeError(item)
        return Unimported(f"{self.__name__}.{item}", self.__refusal[1], self.__refusal[0])

    def __call__(self, *args, **kwargs):
        guard, mistake = self.__refusal
        guard.refuse(mistake, f"import {self.__name__}")

    __enter__ = __call__


def _students(obj) -> bool:
    """An object of the student's own: made by a class the submission defined, or such a class, or
    one of its functions."""
    cls = obj if isinstance(obj, type) else type(obj)
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return getattr(obj, "__module__", None) == STUDENT_MODULE
    return any(getattr(c, "__module__", None) == STUDENT_MODULE for c in cls.__mro__[:-1])


def _torch_object(obj) -> bool:
    if isinstance(obj, types.ModuleType):
        return obj.__name__.split(".")[0] == "torch"
    cls = obj if isinstance(obj, type) else type(obj)
    return str(getattr(cls, "__module__", "")).split(".")[0] == "torch"


def _owner(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, type):
        return obj.__name__
    return type(obj).__name__
