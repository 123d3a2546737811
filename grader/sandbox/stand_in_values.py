"""A value read from a stand-in for a GPU, answered with the value a GPU computes for the same inputs.

Runs inside the sandbox worker, while student code is traced on a stand-in (`graph_probes`). A stand-in holds
no values, so code that reads one (`if not torch.isfinite(weights).all(): print(...)`, an `assert` on the
inputs) could not be judged there. The recorder asks this replay instead: the graph recorded so far, cut to what
the read depends on, runs on the CPU (`grader/graph/run.py`, the parent's own runner, with every bound and the
devices followed) on the CPU copies of the trace's inputs, and the value read there is handed to the code.
That is what a GPU computes for these inputs, so a branch takes the path a GPU would take; the parent still
judges devices from the graph it runs again itself. A copy to the CPU (`.cpu()`, `.to("cpu")`: the road to
`.numpy()`, `np.finfo(x.cpu().numpy().dtype)`) is answered the same way, with the values the copy holds on a GPU,
as a real CPU tensor: kept on the CPU and mixed with the stand-in's tensors, it raises as it does on a GPU. Where
the answer would rest on a constant without values (made on a stand-in outside the recording), or the replay fails
or is refused, nothing is answered and the read counts as leaving the stand-in (`untraceable`), as without the
replay; a copy not answered raises on the stand-in, as before. The cut keeps every write into the memory a read
views; what a GPU computes otherwise than the CPU is never answered: a random draw, memory no operator wrote
(`empty`), a float converted to an integer dtype outside its range.
"""
from __future__ import annotations

import json
import math

import torch
from torch.utils._python_dispatch import _disable_current_modes

from grader.graph import decode, ops, run
from grader.graph.devices import aliased_arguments, argument
from grader.sandbox import fake_gpu

MAX_REPLAYS = 16
"""Replays one trace may ask for: each runs the graph so far, so code that reads values in a loop stops being
answered past this many (its trace is then `untraceable`, as without the replay)."""
UNANSWERED = object()
TO_COPY = torch.ops.aten._to_copy.default


def copies_to_the_cpu(func, args, kwargs) -> bool:
    """A copy of a stand-in's tensor to the CPU: `.cpu()`, `.to("cpu")` and `.to(a CPU tensor)` all end in it."""
    device = kwargs.get("device") if func is TO_COPY else None
    return device is not None and torch.device(device).type == "cpu" and bool(args) and fake_gpu.on_a_stand_in(args[0])


class StandInValues:
    """Answers the reads of one trace on a stand-in: `cpu_inputs` are the values of the trace's inputs, each on
    `device` in the graph (the stand-in's device, as `grader/graph/devices.STAND_INS` names it); `unknown`, the
    positions of inputs whose values the worker does not have (a cache's buffers after a step on the stand-in): a
    read that depends on one is not answered, one that does not (`positions[-1].item()` of an arange made from
    start_pos) is."""

    def __init__(self, cpu_inputs: list[torch.Tensor], device: str, unknown: frozenset[int] = frozenset()) -> None:
        self.cpu_inputs, self.device, self.unknown = cpu_inputs, device, unknown
        self.replays = 0

    def answer(self, nodes: list, constants: list[torch.Tensor], read: list, *, copy_to_the_cpu: bool = False):
        """What the call `read` (a node as the recorder writes it, its arguments already in `nodes`) returns on
        the CPU copies of the inputs, or UNANSWERED. A read returns a Python number or bool; with `copy_to_the_cpu`
        it is a copy of a stand-in's tensor to the CPU (`.cpu()`, `.to("cpu")`), answered with the CPU tensor a GPU
        hands back: a real CPU tensor, so an operator that mixes it with the stand-in's tensors still raises."""
        if self.replays >= MAX_REPLAYS:
            return UNANSWERED
        self.replays += 1
        whole = [*nodes, read]
        depends = _with_the_writes(whole, _needed(whole, len(whole) - 1))
        if any(whole[n][0] == "constant" and _valueless(constants[whole[n][1]], whole[n][2]) for n in depends):
            return UNANSWERED
        if any(_draws(whole[n]) or _uninitialised(whole[n]) for n in depends):
            return UNANSWERED  # a GPU draws from its own generator, and its fresh memory holds what it held before
        if any(whole[n][0] == "input" and whole[n][1] in self.unknown for n in depends):
            return UNANSWERED
        kept = sorted(depends | {n for n, node in enumerate(whole) if node[0] == "input"})  # the inputs stay in place
        renumbered = {old: new for new, old in enumerate(kept)}
        graph_nodes = [_renumbered(whole[old], renumbered.__getitem__) for old in kept]
        converted = _conversions(whole, depends)  # their sources and targets come back beside the read
        read_and_converted = [len(whole) - 1, *(n for pair in converted for n in pair)]
        graph_nodes.append(["output", [{"n": renumbered[n]} for n in read_and_converted]])
        inputs = sum(node[0] == "input" for node in graph_nodes)
        constant_devices = ["cpu"] * len(constants)
        for node in nodes:
            if node[0] == "constant":
                constant_devices[node[1]] = node[2]["device"]
        text = json.dumps({"format": 1, "inputs": inputs, "nodes": graph_nodes, "built_in": []})
        try:
            with _disable_current_modes(), torch._C.DisableTorchFunction():
                graph = decode.decode(text.encode(), len(constants))
                outputs, devices = run.run(graph, self.cpu_inputs, constants, devices=[self.device] * inputs,
                                           constant_devices=constant_devices)
        except Exception:  # refused or failed: the read is not answered, the stand-in judges nothing
            return UNANSWERED
        if not all(_converted_alike(source, target) for source, target in zip(outputs[1::2], outputs[2::2])):
            return UNANSWERED
        value = outputs[0]
        if copy_to_the_cpu:
            return value if isinstance(value, torch.Tensor) and devices[0] == "cpu" else UNANSWERED
        return value if type(value) in (bool, int, float) else UNANSWERED


def _needed(nodes: list, target: int) -> set[int]:
    """The nodes `target` depends on, itself included."""
    needed = {target}
    for position in range(target, -1, -1):
        if position in needed:
            needed.update(_references(nodes[position][2:]) if nodes[position][0] == "call" else ())
    return needed


def _with_the_writes(nodes: list, needed: set[int]) -> set[int]:
    """`needed` with every earlier write into the memory one of its nodes views (`flag[1:].fill_(1)`, then a read of
    `flag`: the recorder binds the write's result to the slice, never to `flag`), and what those writes need: a
    replay without them reads the memory as it was before the writes."""
    roots, writers = _memory(nodes)
    while True:
        writes = {w for n in needed for w in writers.get(roots[n], ()) if w < max(needed)} - needed
        if not writes:
            return needed
        for write in writes:
            needed |= _needed(nodes, write)


def _memory(nodes: list) -> tuple[list[int], dict[int, set[int]]]:
    """Per node, the node that made the memory its tensor views (itself where the memory is its own), and per such
    node, the nodes that write into it, by each operator's schema (`Tensor(a!)` writes, `Tensor(a)` views). A list
    of results (`split`, `getitem` of it) counts as a view of what the operator views."""
    roots: list[int] = []
    writers: dict[int, set[int]] = {}
    for position, node in enumerate(nodes):
        roots.append(position)
        if node[0] != "call":
            continue
        if node[1] == "getitem":
            roots[position] = roots[node[2][0]["n"]]
            continue
        operator_ = ops.resolve(node[1])
        if operator_ is None:
            continue
        keywords = node[3].get("kwargs", {}) if len(node) > 3 else {}
        viewed = None
        for index, name, written in aliased_arguments(operator_):
            memories = {roots[n] for n in _references(argument(node[2], keywords, index, name))}
            if written:
                for memory in memories:
                    writers.setdefault(memory, set()).add(position)
            if viewed is None and memories:
                viewed = min(memories)
        if viewed is not None and any(result.alias_info is not None for result in operator_._schema.returns):
            roots[position] = viewed
    return roots, writers


CONVERSIONS = ("aten._to_copy.default", "aten.copy_.default")


def _conversions(nodes: list, depends: set[int]) -> list[tuple[int, int]]:
    """(source, target) of each conversion among `depends`: `_to_copy` (the target is its own result) and `copy_`
    (the target is the tensor it writes into), whose dtype the value is converted to."""
    found = []
    for n in sorted(depends):
        if nodes[n][0] == "call" and nodes[n][1] in CONVERSIONS:
            given = [a["n"] for a in nodes[n][2][:2] if isinstance(a, dict) and set(a) == {"n"}]
            if nodes[n][1] == CONVERSIONS[0] and given:
                found.append((given[0], n))
            elif len(given) == 2:
                found.append((given[1], given[0]))
    return found


def _converted_alike(source, target) -> bool:
    """Whether a GPU converts `source` into `target`'s dtype as the CPU did: a float outside an integer dtype's range
    (or not finite) has no defined integer, and the two convert it differently (a GPU saturates 3e9 to int32's
    largest, the CPU wraps it; red team on the first lab)."""
    if not (isinstance(source, torch.Tensor) and isinstance(target, torch.Tensor)) or not source.is_floating_point() \
            or target.dtype.is_floating_point or target.dtype.is_complex or target.dtype == torch.bool:
        return True
    bounds = torch.iinfo(target.dtype)
    values = source.detach().double()
    return bool(torch.isfinite(values).all() and (values >= bounds.min).all() and (values <= bounds.max).all())


def _uninitialised(node: list) -> bool:
    return node[0] == "call" and ops.packet(node[1]) in ops.UNINITIALISED


def _draws(node: list) -> bool:
    return node[0] == "call" and ops.draws_random(node[1])


def _references(value) -> set[int]:
    found: set[int] = set()
    _renumbered(value, found.add)
    return found


def _renumbered(value, renumber):
    """An argument as the recorder writes it (`grader/graph/decode.py` reads the same forms), each reference to
    a node `renumber`ed: a keyword dict's items are arguments, never a reference themselves."""
    if isinstance(value, dict):
        if set(value) == {"n"}:
            return {"n": renumber(value["n"])}
        if set(value) == {"kwargs"}:
            return {"kwargs": {key: _renumbered(item, renumber) for key, item in value["kwargs"].items()}}
        return value
    if isinstance(value, list):
        return [_renumbered(item, renumber) for item in value]
    return value


def _valueless(value: torch.Tensor, meta: dict) -> bool:
    """A constant made on a stand-in: the recorder kept no values for it (`tracing.value_for_the_parent`)."""
    return value.numel() != math.prod(meta["shape"])
