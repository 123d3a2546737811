"""The sandbox worker: loads one submission and answers probe requests with plain data.

Runs in a child process that confines itself first (`confinement.confine`). Requests come from
the trusted parent as pickles (a probe's name and its request's fields); answers go back as
`torch.save` bytes holding only tensors, numbers, strings, lists and dicts, which the parent
checks and unpickles with its own short list of globals (grader.sandbox.answers).
No verdict is computed here: student code can patch anything in this process.
"""
from __future__ import annotations

import ast
import contextlib
import io
import os
import pickle
import subprocess
import sys
import types
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.graph.devices import CPU_BESIDE_A_GPU, STAND_INS
from grader.sandbox import audit, call_boundary, generated_code, graph_probes, library_formats, probes, stand_in_cuda
from grader.sandbox.answers import MAX_FRAME_BYTES
from grader.sandbox.probes import SUBMISSION_FILE, describe_error
from grader.exercises import every_graded_name
from grader.sandbox.confinement import Limits, confine
from grader.sandbox.guard import STUDENT_MODULE, Guard
from grader.sandbox.rewrite import compiled, future_flags
from grader.process import single_threaded_torch
from grader.rules.table import FORBIDDEN_OPERATOR

# The built-in attention, denied in the worker however it is named. Python entry points are
# replaced by wrappers that record the call and raise (F.…, torch.nn.functional.…, `from … import`
# and nn.MultiheadAttention all reach these objects); every aten operator behind them gets a
# raising kernel in the dispatcher itself, so torch.ops.aten.…, torch._C._nn.… and calls with the
# dispatch modes disabled hit it too.
FORBIDDEN = {
    "F.scaled_dot_product_attention": (F, "scaled_dot_product_attention"),
    "F.multi_head_attention_forward": (F, "multi_head_attention_forward"),
    "nn.MultiheadAttention": (nn.MultiheadAttention, "__init__"),
}
# Composite operators have no backend kernel to replace: their CompositeImplicitAutograd entry is
# the kernel. Meta kernels cannot be registered from Python; the composite entry covers meta too.
DENIED_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "Autograd", "CPU", "CUDA")
FORBIDDEN_ATEN_OPS = sorted({schema.name.split("::", 1)[1] for schema in torch._C._jit_get_all_schemas()
                             if schema.name.startswith("aten::") and FORBIDDEN_OPERATOR.search(schema.name)})
TAMPER_WATCH = {
    "torch.matmul": (torch, "matmul"), "torch.allclose": (torch, "allclose"), "torch.equal": (torch, "equal"),
    "torch.softmax": (torch, "softmax"), "F.softmax": (F, "softmax"), "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
    "torch.save": (torch, "save"), "torch.load": (torch, "load"), "os._exit": (os, "_exit"), "sys.exit": (sys, "exit"),
}


probes.warm_up()


PROCESS_CREATION = [(os, "fork"), (os, "forkpty"), (os, "system"), (os, "posix_spawn"), (os, "posix_spawnp"),
                    (os, "execv"), (os, "execve"), (subprocess.Popen, "__init__")]


class Runtime:
    """What the probes may observe about the student's process besides return values.

    The denial of the built-in attention explains a refusal where it is met (the student sees which call was
    refused); it decides nothing: the parent finds the built-in attention in the graph however it was reached
    (grader/graph/ops.py). The sandbox's own tests switch it off with the guards, to show that."""

    def __init__(self, deny_built_in: bool = True) -> None:
        self.forbidden_calls: set[str] = set()
        self.tampering: set[str] = set()
        self._denied_ops = None
        if deny_built_in:
            self._deny_built_in()
        for owner, attr in PROCESS_CREATION:  # the process-count limit stops what gets around this
            if hasattr(owner, attr):
                setattr(owner, attr, self._denied(f"{getattr(owner, '__name__', owner)}.{attr}"))
        self.originals = {name: getattr(owner, attr) for name, (owner, attr) in TAMPER_WATCH.items()}

    def _deny_built_in(self) -> None:
        for name, (owner, attr) in FORBIDDEN.items():
            setattr(owner, attr, self._refusing(name))
        self._denied_ops = torch.library.Library("aten", "IMPL")  # registrations live as long as this object
        with warnings.catch_warnings():  # "overriding a previously registered kernel" is the point
            warnings.simplefilter("ignore")
            for op in FORBIDDEN_ATEN_OPS:
                for key in DENIED_KEYS:
                    with contextlib.suppress(RuntimeError):  # keys an operator cannot take
                        self._denied_ops.impl(op, self._refusing(f"aten.{op}"), key)

    def _denied(self, name):
        def deny(*args, **kwargs):
            self.tampering.add(f"process creation ({name})")
            raise PermissionError(f"grading sandbox: {name} is not allowed")

        return deny

    def _refusing(self, name):
        def refuse(*args, **kwargs):
            self.forbidden_calls.add(name)
            raise RuntimeError(f"grading sandbox: {name} is the built-in attention; implement it yourself")

        return refuse

    def tampered(self) -> list[str]:
        patched = {f"patched {n}" for n, (owner, attr) in TAMPER_WATCH.items() if getattr(owner, attr) is not self.originals[n]}
        return sorted(patched | self.tampering)


_COMPILED: dict[tuple, types.CodeType] = {}
"""Each statement's guarded code, compiled once per worker: the worlds' loads of the same source run the same code
(the rewrite depends on the text alone; what it refuses was charged at the first load, to both parts)."""


def load_student(source: str, guard: Guard | None) -> tuple[dict, list[dict]]:
    """Execute the extracted definitions one statement at a time, each through the guards (when on); collect
    what failed."""
    module = types.ModuleType(STUDENT_MODULE)  # registered, so dataclasses and pickling find it
    sys.modules[STUDENT_MODULE] = module
    namespace = module.__dict__
    namespace.update(guard.namespace() if guard else {})
    lines = source.splitlines()
    errors = []
    try:
        tree = ast.parse(source, SUBMISSION_FILE)
    except SyntaxError as error:
        return namespace, [describe_error(error, lines)]
    flags = 0
    for number, statement in enumerate(tree.body):
        try:
            flags |= future_flags(statement)
            key = (source, number, flags, guard is None)
            code = _COMPILED.get(key) or _COMPILED.setdefault(key, compiled(statement, guard, flags, SUBMISSION_FILE))
            exec(code, namespace)  # noqa: S102 - this is the sandboxed worker's whole purpose
        except BaseException as error:  # SystemExit/KeyboardInterrupt from student code too
            errors.append(describe_error(error, lines))
    return namespace, errors


class World:
    """One load of the submission for one world a probe may ask for, registered as the student's module while
    a call runs in it. `asked`: where loading asked what the stand-in cannot answer, noted on every call it traces."""

    def __init__(self, source: str, guard: Guard | None, answered_as_a_gpu: bool) -> None:
        registered = sys.modules.get(STUDENT_MODULE)
        with (stand_in_cuda.swap().active(SUBMISSION_FILE, source.splitlines()) if answered_as_a_gpu
              else contextlib.nullcontext()) as cuda:
            self.namespace, _ = load_student(source, guard)
        self.module = sys.modules.get(STUDENT_MODULE)
        self.asked = cuda.asked if cuda is not None else None
        sys.modules[STUDENT_MODULE] = registered

    @contextlib.contextmanager
    def registered(self):
        outside = sys.modules.get(STUDENT_MODULE)
        sys.modules[STUDENT_MODULE] = self.module
        try:
            yield self
        finally:
            sys.modules[STUDENT_MODULE] = outside


class OtherMachines:
    """The worlds that stand for another machine than the worker's: each stand-in for a GPU (meta, the FakeTensor)
    and the CPU beside a GPU. Each has a load of the submission of its own, made at its first call and kept for its
    later ones (loading costs a few milliseconds, not per call): what the code keeps at module level (a cache, an
    `lru_cache`, a class attribute, a module-level tensor) in one world is never met in another, as no two machines
    share it. Both stand-ins read as `cuda:0`, so a cache keyed by the device's text would otherwise hand one
    stand-in the other's tensors. On a CPU-only build torch.cuda answers as on one GPU from the first line of each
    load (`stand_in_cuda`): what module-level code and default arguments read of it there is what a GPU machine
    shows them; on a GPU it answers for itself. The CPU's probes (and a GPU's) keep the plain load, whose errors
    alone are reported (the same file fails the same way in every load)."""

    DEVICES = (*STAND_INS, CPU_BESIDE_A_GPU)

    def __init__(self, source: str, guard: Guard | None, answered_as_a_gpu: bool) -> None:
        self.source, self.guard, self.answered_as_a_gpu = source, guard, answered_as_a_gpu
        self.worlds: dict[str, World] = {}

    def device(self, request: dict) -> str | None:
        """The world a request runs in, when it is one of these."""
        args = request.get("args")
        device = args.get("device") if isinstance(args, dict) else None
        return device if device in self.DEVICES else None

    def world(self, device: str) -> World:
        if device not in self.worlds:
            self.worlds[device] = World(self.source, self.guard, self.answered_as_a_gpu)
        return self.worlds[device]


def encode(answer: dict) -> bytes:
    """An answer as torch.save bytes: a zip of stored (uncompressed) records, the only kind the
    parent accepts (`answers.decode`); the connection frames it as multiprocessing does."""
    buffer = io.BytesIO()
    torch.save(answer, buffer)
    return buffer.getvalue()


def _answer(request: dict, namespace: dict, lines: list[str], world: World | None) -> dict:
    """A request the probe cannot take is the grader's bug, answered apart from what student code raised."""
    problem = graph_probes.request_problem(request["probe"], request["args"])
    if problem is not None:
        return {"bad_request": problem}
    try:
        with world.registered() if world else contextlib.nullcontext(), \
                call_boundary.students_call():  # all the probe runs is on the student's behalf (hooks, __getattr__...)
            answer = graph_probes.PROBES[request["probe"]](world.namespace if world else namespace, lines,
                                                           **request["args"])
    except BaseException as error:
        return {"error": describe_error(error, lines)}
    if world and isinstance(answer, dict):
        graph_probes.unanswered_at_load(answer, world.asked)
    return answer


def _world_for(request: dict, other_machines: OtherMachines, runtime: Runtime,
               guard: Guard | None) -> tuple[World | None, dict | None]:
    """The world a request runs in (None: the plain load), and when this request made its load, what the guards
    refused and what was patched while it loaded: done while loading, so the parent charges both parts with it, as
    for the plain load."""
    device = other_machines.device(request)
    if device is None:
        return None, None
    if device in other_machines.worlds:
        return other_machines.worlds[device], None
    tampered_before = set(runtime.tampered())
    world = other_machines.world(device)
    return world, {"refused": guard.seen() if guard else [],
                   "tampered": [item for item in runtime.tampered() if item not in tampered_before]}


ANSWER_RECORDS = ("forbidden_calls", "tampered", "refused", "cuda_peak_bytes", "world_loaded")
"""What every answer carries about the worker, kept when an answer too large to send is replaced."""
MAX_LOAD_ERRORS = 20  # the parent reports the first few; the rest would only be repeats


def worker_main(connection, limits: Limits, source: str, use_cuda: bool, guards: bool = True,
                layers_off: frozenset[str] = frozenset()) -> None:
    """Entry point of the sandbox worker process (started by `sandbox.Worker`)."""
    single_threaded_torch()
    try:
        missing = confine(limits, keep_fd=connection.fileno(), cuda=use_cuda, layers_off=layers_off)
    except Exception as error:  # the grader's own failure, told apart from the student's by coming first
        connection.send_bytes(encode({"setup_failed": f"{type(error).__name__}: {error}"}))
        return
    # Sent before any student code runs, so the parent can trust it (and tell a sandbox that never
    # started from a submission that ended its process).
    connection.send_bytes(encode({"confined": True, "missing_isolation": missing}))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    runtime = Runtime(deny_built_in=guards)
    guard = Guard() if guards else None
    if guard:
        audit.install(guard.refuse)
        generated_code.install(guard)
        library_formats.install(guard)
    worker_pid = os.getpid()
    other_machines = OtherMachines(source, guard, answered_as_a_gpu=not use_cuda)
    namespace, load_errors = load_student(source, guard)
    if os.getpid() != worker_pid:  # a fork that escaped the denial must never answer
        os._exit(0)
    lines = source.splitlines()
    # only what the parent reads, so a long submission's ready message stays far below the answer caps
    connection.send_bytes(encode({"ready": True, "load_errors": load_errors[:MAX_LOAD_ERRORS],
                                  "names": sorted(set(every_graded_name()) & set(namespace)),
                                  "tampered": runtime.tampered(), "refused": guard.seen() if guard else []}))  # at definition time
    while True:
        try:
            request = pickle.loads(connection.recv_bytes())
        except EOFError:
            return
        # Student code may have switched TF32 on (the seed notebook does); graded numerics must not use it.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        runtime.forbidden_calls.clear()
        if guard:
            guard.refused.clear()
        world, world_loaded = _world_for(request, other_machines, runtime, guard)
        answer = _answer(request, namespace, lines, world)
        if world_loaded is not None:
            answer["world_loaded"] = world_loaded
        if os.getpid() != worker_pid:
            os._exit(0)
        answer["forbidden_calls"] = sorted(runtime.forbidden_calls)
        answer["tampered"] = runtime.tampered()
        answer["refused"] = guard.seen() if guard else []
        if use_cuda:  # RLIMIT_AS cannot bound CUDA memory: report the peak, the parent enforces the limit
            answer["cuda_peak_bytes"] = int(torch.cuda.max_memory_allocated())
        try:
            payload = encode(answer)
        except BaseException as error:  # e.g. a tensor subclass that refuses to serialise
            payload = encode({"error": describe_error(error, lines), "tampered": ["unserialisable result"]})
        if len(payload) > MAX_FRAME_BYTES:  # honest data too large to check (constants): said so, never sent
            payload = encode({"answer_too_large": len(payload),
                              **{key: answer[key] for key in ANSWER_RECORDS if key in answer}})
        connection.send_bytes(payload)
