"""`torch.cuda` (and `torch.accelerator`, `torch.backends.cuda`, `torch.backends.cudnn`) while student code runs on a
stand-in for a GPU: answered as one GPU answers, or refused and counted.

Runs inside the sandbox worker. On a CPU-only build `torch.cuda` says there is no GPU: most of it raises
("Torch not compiled with CUDA enabled"), some of it answers as a machine without one (`memory_allocated()` is 0,
`is_initialized()` False, `torch.backends.cudnn.is_available()` False). Either tells both stand-ins from a GPU at
once. For the time of a call on a stand-in, every function defined in `torch.cuda` and its submodules
(`GPU_RUNTIME`), and every method of their classes (`Stream.__new__`, `Event.__new__`, `device.__init__`, ...), has
its code swapped (its name too, so a reference taken before the call meets the swap):

- a query a GPU answers the same way every time is answered as on a machine with one GPU (`ANSWERED`, to every
  caller; `ANSWERED_TO_THE_STUDENT`, on the student's behalf only, so the grader's own code between probes never
  believes a GPU initialised);
- anything else asked on the student's behalf is refused: it raises, and `asked` keeps the student's line, which the
  probe reports as a call the stand-in could not answer (the device check reads it as not judged, never as a pass,
  however the code caught the error);
- asked otherwise, the function runs as it always does.

"On the student's behalf" is the call boundary (`call_boundary`: from the worker's call into student code until it
returns), or a frame of student code as the immediate caller; never the immediate caller alone, so a call the
standard library relays (`contextlib.ExitStack().callback(torch.cuda.get_device_properties, 0)`) is the student's.
What a CPU-only build refuses in C, with no Python function to swap (`torch.Generator(device="cuda")`), is seen by
its error (`NO_GPU_BUILD`), raised on the student's behalf on a stand-in, caught or not: a trace hook watches the
exceptions of every frame but torch's own for the time of the call.

On the CPU of a machine with a GPU (`grader/graph/devices.CPU_BESIDE_A_GPU`) only the student's own calls are
answered or refused, as before the call boundary: torch's own code (the move that `.to("cuda")` starts from the
tracer's dispatch) meets this build, whose "Torch not compiled with CUDA enabled" is how the device check sees a
mask sent to a fixed "cuda" (`hardcoded-device`). That case awards no point, so telling it apart gains nothing.

Plain values a CPU-only build holds, read without a call (`torch.version.cuda`, `torch.cuda.default_generators`, the
legacy tensor types), are answered or refused for the same time and to the same readers (`stand_in_build`).
"""
from __future__ import annotations

import contextlib
import sys
import types
from pathlib import Path

import torch

from grader.sandbox import call_boundary
from grader.sandbox.stand_in_build import BuildValues

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
"""torch's own switches (`with torch.backends.cudnn.flags(enabled=False)`): they set the same flags on a build with
or without a GPU, so they run as always."""
NO_GPU_BUILD = ("not compiled with CUDA", "without ATen_cuda", "when none is available", "No CUDA GPUs",
                "NVIDIA driver")
"""How a CPU-only build's C code refuses what a GPU does (`torch.Generator(device="cuda")`, `.pin_memory()`): no
Python function to swap, so the error itself is the sign."""
NOT_WATCHED = ("/torch/", str(Path(__file__).resolve().parents[1]) + "/")
"""torch's own code and the grader's (its tracer and modes run at every operator): their frames are not traced. A
refusal they meet on the student's behalf reaches a frame that is watched (the student's, or a relay's) on its way."""

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
        self.beside_a_gpu = False
        self.build_values = BuildValues(self._reads_for_the_student, self.refusal)

    def __call__(self, args: tuple, kwargs: dict):
        key = sys._getframe(1).f_code.co_qualname
        caller = sys._getframe(2)
        if key in ANSWERED:
            return ANSWERED[key](*args, **kwargs)
        if key in SAME_ON_EVERY_BUILD or not (from_student_code(caller, self.source_file) or self._in_the_boundary()):
            return self.originals[key](*args, **kwargs)
        if key in ANSWERED_TO_THE_STUDENT:
            return ANSWERED_TO_THE_STUDENT[key](*args, **kwargs)
        raise self.refusal(key.removesuffix(".__new__").removesuffix(".__init__"), caller)

    def refusal(self, what: str, caller) -> RuntimeError:
        """What the stand-in cannot answer as a GPU: counted at the student's line, then raised."""
        self._count(caller, what)
        return RuntimeError(f"{what}() cannot be answered as a GPU would on the stand-in for a GPU of a machine "
                            "without one")

    def _count(self, frame, what: str) -> None:
        """The first refusal's place: the nearest student line below `frame`, or, where only C callables and library
        code carried the call (no frame of the submission on the stack), the function asked."""
        if self.asked is not None:
            return
        while frame is not None and not from_student_code(frame, self.source_file):
            frame = frame.f_back
        if frame is None:
            self.asked = {"line": 0, "text": what[:1000], "function": ""}
            return
        line = frame.f_lineno
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else what
        self.asked = {"line": line, "text": text[:1000], "function": frame.f_code.co_name[:200]}

    def _in_the_boundary(self) -> bool:
        """Inside a call the worker made into student code, on a stand-in (beside a GPU, the immediate caller decides)."""
        return call_boundary.on_the_students_behalf() and not self.beside_a_gpu

    def _reads_for_the_student(self, frame) -> bool:
        """Whether a plain value read from `frame` is read on the student's behalf. torch's own code never reads for
        the student, the student's always does, a relay (the standard library, einops) inside the call boundary. The
        grader's frames read for the frame above them when that is the student's (the guard reads every attribute
        student code names), else for the grader itself."""
        relayed_by_the_grader = False
        while frame is not None and frame.f_code.co_filename.startswith(NOT_WATCHED[1]):
            frame, relayed_by_the_grader = frame.f_back, True
        if frame is None or NOT_WATCHED[0] in frame.f_code.co_filename:
            return False
        return from_student_code(frame, self.source_file) or (not relayed_by_the_grader and self._in_the_boundary())

    def _trace(self, frame, event, arg):
        """The trace hook for the time of a call on a stand-in: every frame but torch's and the grader's own watches its
        exceptions."""
        filename = frame.f_code.co_filename
        if NOT_WATCHED[0] in filename or filename.startswith(NOT_WATCHED[1]):
            return None
        frame.f_trace_lines = False
        return self._watch

    def _watch(self, frame, event, arg):
        if (event == "exception" and self.asked is None and any(sign in str(arg[1]) for sign in NO_GPU_BUILD)
                and (self._in_the_boundary() or from_student_code(frame, self.source_file))):
            self._count(frame, type(arg[1]).__name__)
        return self._watch

    @contextlib.contextmanager
    def active(self, source_file: str, lines: list[str], beside_a_gpu: bool = False):
        """The swap for one call; `asked` then says where student code asked what the stand-in cannot answer.
        `beside_a_gpu`: the CPU of a machine with a GPU, where this build's own refusal of "cuda" is the sign."""
        self.asked, self.source_file, self.lines, self.beside_a_gpu = None, source_file, lines, beside_a_gpu
        modules = {id(f.__globals__): f.__globals__ for f in self.functions.values()}
        tracing_before = sys.gettrace()
        try:
            for namespace in modules.values():
                namespace[DISPATCHER] = self
            for key, function in self.functions.items():
                function.__code__ = self.stubs[key]
            if not beside_a_gpu:
                with call_boundary.graders_own():  # the audit hook refuses a trace hook set on the student's behalf
                    sys.settrace(self._trace)
            with self.build_values.taken_out():
                yield self
        finally:
            if not beside_a_gpu:
                with call_boundary.graders_own():
                    sys.settrace(tracing_before)
            for key, function in self.functions.items():
                function.__code__ = self.codes[key]
            for namespace in modules.values():
                namespace.pop(DISPATCHER, None)


_swap: StandInCuda | None = None


def swap() -> StandInCuda:
    """The worker's one table of torch.cuda's functions (made in the fork server by `warm_up`)."""
    global _swap
    if _swap is None:
        _swap = StandInCuda()
    return _swap


def warm_up() -> None:
    swap()
