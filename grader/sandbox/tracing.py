"""Record what student code computes as a graph of tensor operations, and send it as data.

Runs inside the sandbox worker. The student's function is called once under a recorder (a `TorchDispatchMode`) on
inputs the worker was sent as decoys: every aten operator that reaches the dispatcher is recorded with its arguments,
each tensor argument named by the node that made it (or as a graph input, or as a constant when it came from
elsewhere). The recorder sits below autograd, so when the probe asks for gradients inside the call, the backward's
own operators are recorded too, a custom `autograd.Function.backward` included. The built-in attention reaches the
dispatcher as its own kernel (`_scaled_dot_product_*`), or on its math path through `_safe_softmax`.

A library composite of the built-in attention (`F.multi_head_attention_forward`, `nn.MultiheadAttention`: the names
of `rules.table.FORBIDDEN_API`) dispatches only ordinary operators, as hand-written attention does; the recorder
notes each such composite found on the Python stack of an operator it records, with the student's line that called it
(`built_in` in the graph), which the parent names `forbidden-api`.

The graph goes to the parent as JSON bytes (`encode`), which checks it as hostile data and runs it on inputs of its
own (`grader/graph/`): nothing the worker computes is believed. Code that computes outside the recorder leaves a
constant in the graph, wrong on the parent's inputs. The graphs of one answer (each call of a module) share one copy
of a constant they all read (`ConstantCopies`): torch.save writes a tensor object once however often the answer names
it, so a module-level mask costs the answer its size once, not once per call; and where a graph's first use of such a
tensor is a slice, only the slice is sent (`SLICES`).
"""
from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from grader.graph.decode import MAX_BUILT_IN
from grader.rules.table import FORBIDDEN_API
from grader.sandbox import fake_gpu, stand_in_values
from grader.sandbox.values_leaving import ValuesLeaving, reads_values

GRAPH_FORMAT = 1
PRIM_DEVICE = torch.ops.prim.device.default


class Untraceable(Exception):
    """The call used a value the format cannot carry (the parent is told what, never the value)."""


class Recorder(TorchDispatchMode):
    """Records each dispatched operator as a node; tensors are known by identity, none kept alive (a temporary dies
    and its address is reused as in real use: `id()` told a kept one apart), an id known only while its tensor lives."""

    def __init__(self, inputs: list[torch.Tensor], source_file: str | None = None,
                 copies: ConstantCopies | None = None) -> None:
        super().__init__()
        self.source_file = source_file
        self.copies = ConstantCopies() if copies is None else copies
        self.built_in: dict[str, int] = {}  # a composite of the built-in attention -> the student's line calling it
        self.nodes: list[list] = []
        self.constants: list[torch.Tensor] = []
        self.made: dict[int, tuple[int, weakref.ref]] = {}  # id(tensor) -> (the node whose value it is, the tensor)
        self.leaving: ValuesLeaving | None = None  # told of every operator that hands values to Python
        self.stand_in_values: stand_in_values.StandInValues | None = None  # answers a read on a stand-in
        self.raised: tuple[int, str] | None = None  # (line, function) of student code where an operator first raised
        for index, tensor in enumerate(inputs):
            self._bind(tensor, self._add(["input", index]))

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """No dynamo-disabling shim around `__torch_dispatch__` (0.1 ms an operator): nothing in the worker compiles."""
        return False

    def _add(self, entry: list) -> int:
        self.nodes.append(entry)
        return len(self.nodes) - 1

    def _bind(self, tensor: torch.Tensor, node: int) -> None:
        self.made[id(tensor)] = (node, weakref.ref(tensor))

    def _node(self, tensor: torch.Tensor) -> int | None:
        node, alive = self.made.get(id(tensor), (None, lambda: None))
        return node if alive() is tensor else None

    def ref(self, tensor: torch.Tensor) -> dict:
        node = self._node(tensor)
        if node is None:  # made outside the recording: its value is a constant of the graph
            self.constants.append(self.copies.of(tensor))
            node = self._add(["constant", len(self.constants) - 1, _meta_of(tensor)])
            self._bind(tensor, node)
        return {"n": node}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is PRIM_DEVICE:  # a FakeTensor's `.device` asks the modes; it computes nothing
            return func(*args, **kwargs)
        if func in SLICES and args and isinstance(args[0], torch.Tensor) and self._node(args[0]) is None:
            return func(*args, **kwargs)  # a part of a constant: the part becomes the constant, if it is used
        if _composite(func):  # autograd is off (`torch.inference_mode`): the parts it would dispatch are recorded
            with self:
                return func.decompose(*args, **kwargs)
        self._note_built_in(sys._getframe(1))
        copy = func is stand_in_values.TO_COPY and stand_in_values.copies_to_the_cpu(func, args, kwargs)
        read = self.leaving is not None and reads_values(func)
        if copy or read:
            answered = self._answered(func, args, kwargs, copy)
            if answered is not stand_in_values.UNANSWERED:
                return answered
            if not copy:  # an unanswered copy raises on the stand-in, as the move it is
                self.leaving.saw(args, kwargs)
        entry = ["call", _target(func), self.value(args), {"kwargs": self.value(kwargs)["kwargs"] if kwargs else {}}]
        try:
            result = self._indexed_by_a_mask(func, args, kwargs)
            if result is None:
                result = func(*args, **kwargs)
        except Exception:
            self._note_raised(sys._getframe(1))
            raise
        node = self._add(entry)
        if isinstance(result, torch.Tensor):
            self._bind(result, node)
        elif isinstance(result, (tuple, list)):
            for position, item in enumerate(result):
                if isinstance(item, torch.Tensor):
                    self._bind(item, self._add(["call", "getitem", [{"n": node}, position], {"kwargs": {}}]))
        return result

    def _answered(self, func, args, kwargs, copy_to_the_cpu: bool = False):
        """A value read from the stand-in's own tensors, or a copy of one to the CPU, as the same graph gives it on
        the CPU (`stand_in_values`), recorded as the node that read it; UNANSWERED where there is no such value."""
        if self.stand_in_values is None or all(t.device.type == "cpu" for t in fake_gpu.tensors_in(args, kwargs)):
            return stand_in_values.UNANSWERED
        try:
            entry = ["call", _target(func), self.value(list(args)), {"kwargs": self.value(kwargs)["kwargs"]}]
        except Untraceable:
            return stand_in_values.UNANSWERED
        answered = self.stand_in_values.answer(self.nodes, self.constants, entry, copy_to_the_cpu=copy_to_the_cpu)
        if answered is not stand_in_values.UNANSWERED:
            node = self._add(entry)
            if isinstance(answered, torch.Tensor):
                self._bind(answered, node)
        return answered

    def _indexed_by_a_mask(self, func, args, kwargs):
        """`scores[..., future]` on a stand-in: the result is as long as the mask has True values, which a stand-in
        has none of (meta has no kernel for it, the FakeTensor refuses a size it cannot know). The count is read
        from the CPU copies, as a GPU would have it (`stand_in_values`), and the index taken by that many positions
        for the shape; the node recorded is the mask's, which the parent runs on real values. None where this is
        not such an index, or the count cannot be had."""
        if func is not INDEX or self.stand_in_values is None or kwargs or len(args) != 2 \
                or not fake_gpu.on_a_stand_in(args[0]):
            return None
        indices = list(args[1])
        masks = [n for n, i in enumerate(indices) if isinstance(i, torch.Tensor) and i.dtype == torch.bool]
        if len(masks) != 1:
            return None
        mask = indices[masks[0]]
        total = ["call", "aten.sum.default", [self.ref(mask)], {"kwargs": {}}]
        read = ["call", "aten._local_scalar_dense.default", [{"n": len(self.nodes)}], {"kwargs": {}}]
        count = self.stand_in_values.answer([*self.nodes, total], self.constants, read)
        if type(count) is not int:
            return None
        positions = [args[0].new_zeros(count, dtype=torch.long)] * max(mask.dim(), 1)
        return func(args[0], indices[:masks[0]] + positions + indices[masks[0] + 1:])

    def _note_raised(self, frame) -> None:
        """The student's line under which an operator first raised: on a stand-in that error may be the stand-in's
        alone (no meta kernel, no CUDA), so code that catches it ran something else than on a GPU."""
        while frame is not None and frame.f_code.co_filename != self.source_file:
            frame = frame.f_back
        if self.raised is None:
            self.raised = (frame.f_lineno, frame.f_code.co_name) if frame is not None else (0, "")

    def _note_built_in(self, frame) -> None:
        """The built-in attention's composite, if one is between this operator and the student's code."""
        composite = None
        while frame is not None and frame.f_code.co_filename != self.source_file:
            composite = BUILT_IN_COMPOSITES.get(frame.f_code, composite)
            frame = frame.f_back
        if composite is not None and len(self.built_in) < MAX_BUILT_IN:
            self.built_in.setdefault(composite, frame.f_lineno if frame is not None else 0)

    def value(self, value):
        """One argument in the JSON form the parent decodes (`grader/graph/decode.py`)."""
        kind = type(value)
        if kind is int or kind is bool or value is None:  # most arguments: sizes and dims, before the checks below
            return value
        if kind is list or kind is tuple or not isinstance(value, torch.Tensor) and isinstance(value, (list, tuple)):
            return [item if (kind := type(item)) is int or kind is bool or item is None else  # sizes, tensors: here
                    self.ref(item) if kind is torch.Tensor else self.value(item) for item in value]
        if isinstance(value, dict):
            return {"kwargs": {str(key): self.value(item) for key, item in value.items()}}
        if isinstance(value, torch.Tensor):
            return self.ref(value)
        if isinstance(value, (bool, int, str)):  # an int subclass (an enum) or a string
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        if isinstance(value, torch.device):
            return {"device": value.type}
        if isinstance(value, torch.layout):
            return {"layout": str(value).removeprefix("torch.")}
        if isinstance(value, torch.memory_format):
            return {"memory_format": str(value).removeprefix("torch.")}
        raise Untraceable(f"an argument of type {type(value).__name__}")


INDEX = torch.ops.aten.index.Tensor

SLICES = (torch.ops.aten.slice.Tensor, torch.ops.aten.select.int)  # a tuple: `in` compares by identity, in C
"""Views that pick part of a tensor. Of a tensor made outside the recording, the part alone is sent, as the
constant the graph reads (a module-level mask for 1024 positions sliced to T x T sends T x T values)."""

def trace(function, inputs: list[torch.Tensor], leaving: ValuesLeaving | None = None,
          source_file: str | None = None, values: stand_in_values.StandInValues | None = None,
          copies: ConstantCopies | None = None) -> Recorder:
    """Call `function(*inputs)` under a recorder; the list of tensors it returns is the graph's output. Composites
    of the built-in attention are noted with the line of `source_file` that called them. On a stand-in, `values`
    answers what the code reads of the stand-in's tensors (with `leaving` given); `copies` is shared by the graphs
    of one answer."""
    recorder = Recorder(inputs, source_file, copies)
    recorder.leaving, recorder.stand_in_values = leaving, values
    with recorder, leaving if leaving is not None else contextlib.nullcontext():
        outputs = function(*inputs)
    recorder.nodes.append(["output", [recorder.ref(t) for t in outputs]])
    return recorder


def encode(recorder: Recorder) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """The graph as UTF-8 JSON in a uint8 tensor (the answer channel carries tensors up to its element cap,
    not long nested lists), and its constant tensors in order."""
    inputs = sum(entry[0] == "input" for entry in recorder.nodes)
    built_in = [{"name": name, "line": line} for name, line in recorder.built_in.items()]
    text = json.dumps({"format": GRAPH_FORMAT, "inputs": inputs, "nodes": recorder.nodes, "built_in": built_in},
                      separators=(",", ":"))
    with fake_gpu.real():
        return torch.frombuffer(bytearray(text.encode()), dtype=torch.uint8), recorder.constants


class ConstantCopies:
    """The copy sent for each constant, one per tensor for the graphs of one answer: a tensor read by several
    calls is sent once. A tensor changed in place since its copy (its version moved) gets a new copy."""

    def __init__(self) -> None:
        self.copied: dict[int, tuple[torch.Tensor, int, torch.Tensor]] = {}  # id -> (tensor kept alive, version, copy)

    def of(self, tensor: torch.Tensor) -> torch.Tensor:
        known = self.copied.get(id(tensor))
        version = tensor._version
        if known is None or known[0] is not tensor or known[1] != version:
            known = self.copied[id(tensor)] = (tensor, version, value_for_the_parent(tensor))
        return known[2]


def value_for_the_parent(tensor: torch.Tensor) -> torch.Tensor:
    """A plain CPU copy of a tensor's values (none on a stand-in: the parent rebuilds it from `_meta_of`); made
    with the fake stand-in's mode set aside, so that a real tensor's copy is real."""
    with fake_gpu.real():
        if fake_gpu.on_a_stand_in(tensor):
            return torch.empty(0)
        return torch.Tensor.as_subclass(tensor.detach().to("cpu", copy=True), torch.Tensor)


def _meta_of(tensor: torch.Tensor) -> dict:
    """A constant on a stand-in has no values: the parent rebuilds it from shape and dtype."""
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."), "device": tensor.device.type}


def _composites() -> dict:
    """The code of each torch function or class method named as the built-in attention (`FORBIDDEN_API`) in the
    modules that define them in Python, by its qualified name."""
    found = {}
    for module in (torch.nn.functional, torch.nn.modules.activation):
        for name, value in vars(module).items():
            if not FORBIDDEN_API.match(name):
                continue
            functions = vars(value).values() if isinstance(value, type) else [value]
            for function in functions:
                code = getattr(function, "__code__", None)
                if code is not None:
                    found[code] = f"{module.__name__}.{code.co_qualname}"
    return found


BUILT_IN_COMPOSITES = _composites()


@functools.lru_cache(maxsize=4096)
def _composite(func) -> bool:
    """An operator torch defines by other operators (`CompositeImplicitAutograd`: linear, matmul, softmax.int,
    dropout, reshape), which autograd decomposes before any mode sees it, except where autograd is off."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")


@functools.lru_cache(maxsize=4096)
def _target(func) -> str:
    return f"{func.namespace}.{func.overloadpacket.__name__}.{func._overloadname}"
