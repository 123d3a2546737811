"""`torch.cuda` (and `torch.accelerator`, `torch.backends.cuda`, `torch.backends.cudnn`) while student code runs on a
stand-in for a GPU: answered as one GPU answers, or refused and counted.

Runs inside the sandbox worker. On a CPU-only build `torch.cuda` says there is no GPU: most of it raises
("Torch not compiled with CUDA enabled"), some of it answers as a machine without one (`memory_allocated()` is 0,
`is_initialized()` False). Either tells both stand-ins from a GPU at once. For the time of a call on a stand-in,
every function defined in `torch.cuda` and its submodules (`GPU_RUNTIME`), and every method of their classes
(`Stream.__new__`, `Event.__new__`, `device.__init__`, ...), has its code swapped (its name too, so a reference
taken before the call meets the swap):

- a query a GPU answers the same way every time is answered as on a machine with one GPU (`ANSWERED`, to every
  caller; `ANSWERED_TO_THE_STUDENT`, to student code only, so torch's own code never believes a GPU initialised);
- anything else asked on the student's behalf is refused: it raises, and `asked` keeps the student's line, which the
  probe reports as a call the stand-in could not answer (the device check reads it as not judged, never as a pass,
  however the code caught the error);
- called from torch's own code outside a call into student code, the function runs as it always does.

"On the student's behalf" is decided at the call boundary (`call_boundary`), never by the immediate caller alone: a
call the standard library relays (`contextlib.ExitStack().callback`) or C callables carry from torch's own code (a
forward pre-hook made of `functools.partial`) is the student's. What a CPU-only build refuses in C (no Python
function to swap: `torch.Generator(device="cuda")`, the legacy `torch.cuda.FloatTensor(1)`) is seen by its error
(`NO_GPU_BUILD`), in every frame but torch's own, through a trace hook set for the call. Plain values are set as a
GPU build holds them (`torch.version.cuda`), or refuse any use (`torch.cuda.default_generators[0]`).
"""
from __future__ import annotations

import contextlib
import sys
import types

import torch

from grader.sandbox import call_boundary

GPU_RUNTIME = ("torch.cuda", "torch.accelerator", "torch.backends.cuda", "torch.backends.cudnn")
"""The modules whose functions ask the GPU runtime (and their submodules: a name that starts so)."""
RUNS_AS_ALWAYS = ("torch.cuda.amp",)
"""Mixed precision (`torch.cuda.amp.autocast(enabled=False)`, Hugging Face's upcast path): honest code uses it, it
asks the runtime nothing a stand-in must answer, and on a CPU-only build it runs (disabled), as it did before."""
DISPATCHER = "__stand_in_cuda__"
"""The name the swapped code looks up in its function's own module globals, set there for the time of a call."""

CUDNN_VERSION = 90100
"""The cuDNN a GPU build of torch carries (9.1): one machine answers the same number every time."""
SAME_ON_EVERY_BUILD = {"torch.backends.cudnn.set_flags", "torch.backends.cudnn.flags"}
"""Switches of torch's own (`with torch.backends.cudnn.flags(enabled=False)`): they set the same flags on a build with
or without a GPU, so they run as always."""
PLAIN_VALUES = {(torch.version, "cuda"): "12.4"}
"""Values a CPU-only build holds where a GPU build holds others (`torch.version.cuda` is None there), set for the time
of a call on a stand-in. `torch.cuda.default_generators` holds one generator on a GPU: one that refuses any use
(`_GeneratorOnTheGpu`), since a generator on the GPU cannot be made here."""

NO_GPU_BUILD = ("not compiled with CUDA", "without ATen_cuda", "when none is available", "No CUDA GPUs",
                "NVIDIA driver")
"""How a CPU-only build's C code refuses what a GPU does (`torch.Generator(device="cuda")`, the legacy
`torch.cuda.FloatTensor(...)`, `.pin_memory()`): no Python function to swap, so the error itself is the sign. Raised
in any frame but torch's own on the student's behalf, caught or not, it counts as a call the stand-in cannot answer."""
TORCH_OWN_CODE = "/torch/"

ANSWERED = {
    "torch.cuda.is_available": lambda: True,
    "torch.cuda.device_count": lambda: 1,
    "torch.cuda.current_device": lambda: 0,
    "torch.cuda.get_device_name": lambda device=None: "NVIDIA GPU",
    "torch.cuda.get_device_capability": lambda device=None: (8, 0),
}
ANSWERED_TO_THE_STUDENT = {
    "torch.cuda.is_initialized": lambda: True,
    "torch.cuda.synchronize": lambda device=None: None,
    "torch.cuda.memory.empty_cache": lambda: None,
    "torch.cuda.random.manual_seed": lambda seed: None,
    "torch.cuda.random.manual_seed_all": lambda seed: None,
    "torch.cuda.random.seed": lambda: None,
    "torch.cuda.random.seed_all": lambda: None,
    "torch.accelerator.is_available": lambda: True,
    "torch.accelerator.device_count": lambda: 1,
    "torch.accelerator.current_accelerator": lambda check_available=False: torch.device("cuda"),
    "torch.accelerator.current_device_index": lambda: 0,
    "torch.accelerator.current_device_idx": lambda: 0,
    "torch.accelerator.synchronize": lambda device=None: None,
    "torch.accelerator.memory.empty_cache": lambda: None,
    "torch.backends.cuda.is_built": lambda: True,
    "torch.backends.cudnn.is_available": lambda: True,
    "torch.backends.cudnn.version": lambda: CUDNN_VERSION,
}
"""What a GPU answers the same way every time (a wait that returns nothing, a cache emptied, a generator seeded:
the stand-in draws no numbers on the GPU's generator)."""


def _stub_codes() -> dict[int, types.CodeType]:
    """The swapped-in code for functions with 0 to 4 closure cells (a function's code must keep its cell count)."""

    def free0():
        def stub(*args, **kwargs):
            return __stand_in_cuda__(args, kwargs)  # noqa: F821 - set in the function's own globals
        return stub

    def free1(a=None):
        def stub(*args, **kwargs):
            a  # noqa: B018 - a cell, to match the function's own
            return __stand_in_cuda__(args, kwargs)  # noqa: F821
        return stub

    def free2(a=None, b=None):
        def stub(*args, **kwargs):
            a, b  # noqa: B018
            return __stand_in_cuda__(args, kwargs)  # noqa: F821
        return stub

    def free3(a=None, b=None, c=None):
        def stub(*args, **kwargs):
            a, b, c  # noqa: B018
            return __stand_in_cuda__(args, kwargs)  # noqa: F821
        return stub

    def free4(a=None, b=None, c=None, d=None):
        def stub(*args, **kwargs):
            a, b, c, d  # noqa: B018
            return __stand_in_cuda__(args, kwargs)  # noqa: F821
        return stub

    return {len(f().__code__.co_freevars): f().__code__ for f in (free0, free1, free2, free3, free4)}


STUBS = _stub_codes()


def _functions() -> dict[str, types.FunctionType]:
    """Every function defined in torch.cuda and its submodules, and the methods of their classes, by qualified name."""
    found: dict[str, types.FunctionType] = {}
    for name, module in sorted(sys.modules.items()):
        if not name.startswith(GPU_RUNTIME) or name.startswith(RUNS_AS_ALWAYS) or not isinstance(module, types.ModuleType):
            continue
        inner = vars(module).get("m")  # torch.backends' property modules keep their functions in the module they wrap
        for value in list(vars(inner if isinstance(inner, types.ModuleType) else module).values()):
            if isinstance(value, types.FunctionType) and value.__module__ == name:
                found.setdefault(f"{name}.{value.__qualname__}", value)
            elif isinstance(value, type) and value.__module__ == name:
                for member in vars(value).values():
                    function = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
                    if isinstance(function, types.FunctionType) and function.__module__ == name:
                        found.setdefault(f"{name}.{function.__qualname__}", function)
    return {key: f for key, f in found.items() if len(f.__code__.co_freevars) in STUBS}


def _original(function: types.FunctionType) -> types.FunctionType:
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


def from_student_code(frame, source_file: str) -> bool:
    """Student code: the submission's own, or code compiled from a string at run time (not a library's file)."""
    filename = frame.f_code.co_filename if frame is not None else ""
    return filename == source_file or (filename.startswith("<") and not filename.startswith("<frozen"))


def _nearest_student_frame(frame, source_file: str):
    """The closest frame of student code below `frame`, however many library frames lie between."""
    while frame is not None and not from_student_code(frame, source_file):
        frame = frame.f_back
    return frame


class _GeneratorOnTheGpu:
    """`torch.cuda.default_generators[0]` on a stand-in: a GPU's generator cannot be made on a CPU-only build, so
    any use of it is refused and counted (its `type()` still tells: docs/isolation.md)."""

    def __getattribute__(self, name):
        raise swap().refusal("torch.cuda.default_generators[0]", sys._getframe(1))


class StandInCuda:
    """The swap, made once per worker (the fork server builds the table), entered for each call on a stand-in."""

    def __init__(self) -> None:
        self.functions = _functions()
        self.originals = {key: _original(f) for key, f in self.functions.items()}
        self.codes = {key: f.__code__ for key, f in self.functions.items()}
        self.stubs = {key: STUBS[len(f.__code__.co_freevars)].replace(co_name=f.__name__, co_qualname=key)
                      for key, f in self.functions.items()}
        self.asked: dict | None = None  # the student's line of the first call refused, as describe_error says it
        self.lines: list[str] = []
        self.source_file = ""

    def __call__(self, args: tuple, kwargs: dict):
        key = sys._getframe(1).f_code.co_qualname
        if key in ANSWERED:
            return ANSWERED[key](*args, **kwargs)
        if key in SAME_ON_EVERY_BUILD:
            return self.originals[key](*args, **kwargs)
        student = _nearest_student_frame(sys._getframe(2), self.source_file)
        if student is None and not call_boundary.on_the_students_behalf():
            return self.originals[key](*args, **kwargs)
        if key in ANSWERED_TO_THE_STUDENT:
            return ANSWERED_TO_THE_STUDENT[key](*args, **kwargs)
        raise self.refusal(key.removesuffix(".__new__").removesuffix(".__init__"), sys._getframe(2))

    def refusal(self, what: str, caller) -> RuntimeError:
        """What the stand-in cannot answer as a GPU: counted at the student's line, then raised."""
        if self.asked is None:
            self.asked = self._place(_nearest_student_frame(caller, self.source_file), what)
        return RuntimeError(f"{what}() cannot be answered as a GPU would on the stand-in for a GPU of a machine "
                            "without one")

    def _trace(self, frame, event, arg):
        """Python's trace hook for the time of a call: each frame but torch's own watches its exceptions."""
        if TORCH_OWN_CODE in frame.f_code.co_filename:
            return None
        frame.f_trace_lines = False
        return self._watch

    def _watch(self, frame, event, arg):
        if event == "exception" and self.asked is None and any(sign in str(arg[1]) for sign in NO_GPU_BUILD):
            student = _nearest_student_frame(frame, self.source_file)
            if student is not None or call_boundary.on_the_students_behalf():
                self.asked = self._place(student, type(arg[1]).__name__)
        return self._watch

    def _place(self, student, key: str) -> dict:
        """The student's line that led here, or, where only C callables carried the call, the function asked."""
        if student is None:
            return {"line": 0, "text": key[:1000], "function": ""}
        line = student.f_lineno
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else key
        return {"line": line, "text": text[:1000], "function": student.f_code.co_name[:200]}

    @contextlib.contextmanager
    def active(self, source_file: str, lines: list[str]):
        """The swap for one call; `asked` then says where student code asked what the stand-in cannot answer."""
        self.asked, self.source_file, self.lines = None, source_file, lines
        modules = {id(f.__globals__): f.__globals__ for f in self.functions.values()}
        held = {place: getattr(*place) for place in (*PLAIN_VALUES, (torch.cuda, "default_generators"))}
        tracing_before = sys.gettrace()
        try:
            for (owner, name), value in PLAIN_VALUES.items():
                setattr(owner, name, value)
            torch.cuda.default_generators = (_GeneratorOnTheGpu(),)  # made here: its class refuses even being read
            for namespace in modules.values():
                namespace[DISPATCHER] = self
            for key, function in self.functions.items():
                function.__code__ = self.stubs[key]
            with call_boundary.graders_own():  # the grader's own: the audit refuses a trace hook set for the student
                sys.settrace(self._trace)
            yield self
        finally:
            with call_boundary.graders_own():
                sys.settrace(tracing_before)
            for key, function in self.functions.items():
                function.__code__ = self.codes[key]
            for namespace in modules.values():
                namespace.pop(DISPATCHER, None)
            for (owner, name), value in held.items():
                setattr(owner, name, value)


_swap: StandInCuda | None = None


def swap() -> StandInCuda:
    """The worker's one table of torch.cuda's functions (made in the fork server by `warm_up`)."""
    global _swap
    if _swap is None:
        _swap = StandInCuda()
    return _swap


def warm_up() -> None:
    swap()
