"""A graph from a worker, read as hostile data: JSON of bounded size, every node well formed.

The worker writes the graph (`grader/sandbox/tracing.py`); student code in the worker could write
anything in its place. Here nothing is resolved or run: the text is parsed, every node's kind,
target and arguments are checked against the few forms the tracer writes, every reference points to
an earlier node, and the node count, the nesting and the list lengths are bounded. What is refused
raises `GraphRefused` with the reason, and the part is graded without that graph.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import re

from grader.graph import ops

MAX_GRAPH_BYTES = 4 << 20
MAX_NODES = 20_000
MAX_LIST = 4096  # items in one argument list (a size, a list of tensors)
MAX_DEPTH = 6  # nesting inside one argument
DTYPES = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128")
DEVICES = ("cpu", "cuda", "meta")
LAYOUTS = ("strided",)
MEMORY_FORMATS = ("contiguous_format", "preserve_format", "channels_last")
TARGET = re.compile(r"^[a-z_][a-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$")
FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class GraphRefused(Exception):
    """Not a graph the tracer could have written, or one over a bound: refused, with the reason."""


@dataclasses.dataclass(frozen=True)
class Node:
    kind: str  # input | constant | call | output
    target: str = ""  # a call's operator ("aten.bmm.default") or special; an input's or constant's index as text
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    index: int = 0  # an input's or constant's position
    meta: dict | None = None  # a constant's shape, dtype and device (a meta constant has no values)


@dataclasses.dataclass(frozen=True)
class Graph:
    inputs: int
    nodes: tuple[Node, ...]
    built_in: tuple[tuple[str, int], ...] = ()  # the worker's note: a built-in attention composite, the line calling it

    def calls(self) -> list[Node]:
        return [node for node in self.nodes if node.kind == "call"]

    @functools.cached_property
    def references(self) -> tuple[tuple[int, ...], ...]:
        """Per node, the earlier nodes its arguments name, in order (each call's graph is read several times)."""
        return tuple(tuple(_references([node.args, node.kwargs], [])) for node in self.nodes)

    def targets(self) -> list[str]:
        return [node.target for node in self.calls()]


@dataclasses.dataclass(frozen=True)
class Ref:
    """An argument that is an earlier node's result."""
    node: int


def _references(value, found: list[int]) -> list[int]:
    if isinstance(value, Ref):
        found.append(value.node)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _references(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _references(item, found)
    return found


@dataclasses.dataclass(frozen=True)
class Tagged:
    """A dtype, device, layout or memory format, by the name the allow-lists above hold."""
    kind: str
    name: str


def decode(data: bytes, constants: int) -> Graph:
    """The graph in `data` (UTF-8 JSON), whose constants are the answer's first `constants` tensors."""
    if len(data) > MAX_GRAPH_BYTES:
        raise GraphRefused(f"a graph of {len(data)} bytes, above {MAX_GRAPH_BYTES}")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise GraphRefused(f"a graph that is not JSON ({type(error).__name__})") from None
    if not (type(raw) is dict and raw.get("format") == 1 and type(raw.get("inputs")) is int
            and type(raw.get("nodes")) is list):
        raise GraphRefused("a graph without its format, inputs and nodes")
    entries = raw["nodes"]
    if len(entries) > MAX_NODES:
        raise GraphRefused(f"a graph of {len(entries)} nodes, above {MAX_NODES}")
    nodes: list[Node] = []
    inputs = 0
    for position, entry in enumerate(entries):
        node = _node(entry, position, constants)
        if node.kind == "input":
            if node.index != inputs:
                raise GraphRefused("graph inputs out of order")
            inputs += 1
        nodes.append(node)
    if inputs != raw["inputs"] or not nodes or nodes[-1].kind != "output" or \
            sum(node.kind == "output" for node in nodes) != 1:
        raise GraphRefused("a graph whose inputs or output do not add up")
    return Graph(inputs, tuple(nodes), _built_in(raw.get("built_in", [])))


MAX_BUILT_IN = 8  # notes of built-in attention composites in one graph (the worker keeps to it too)
BUILT_IN_NAME = re.compile(r"^torch(\.[A-Za-z_][A-Za-z0-9_]*){1,6}$")


def _built_in(notes) -> tuple[tuple[str, int], ...]:
    """The composites of the built-in attention the worker saw on the stack, each with the student's line."""
    if not (type(notes) is list and len(notes) <= MAX_BUILT_IN and all(
            type(note) is dict and set(note) == {"name", "line"} and type(note["name"]) is str
            and len(note["name"]) <= 200 and BUILT_IN_NAME.match(note["name"]) and type(note["line"]) is int
            and 0 <= note["line"] < 1 << 31 for note in notes)):
        raise GraphRefused("a graph whose built-in attention notes are not the tracer's")
    return tuple((note["name"], note["line"]) for note in notes)


def _node(entry, position: int, constants: int) -> Node:
    if type(entry) is not list or not entry or type(entry[0]) is not str:
        raise GraphRefused(f"node {position} is not a node")
    kind = entry[0]
    if kind == "input" and len(entry) == 2 and type(entry[1]) is int:
        return Node("input", index=entry[1])
    if kind == "constant" and len(entry) == 3 and type(entry[1]) is int and 0 <= entry[1] < constants:
        return Node("constant", index=entry[1], meta=_constant_meta(entry[2], position))
    if kind == "call" and len(entry) == 4 and type(entry[1]) is str and _well_formed_target(entry[1]):
        args = _argument(entry[2], position, 0)
        kwargs = _argument(entry[3], position, 0)
        if type(args) is not list or type(kwargs) is not dict:
            raise GraphRefused(f"node {position}: arguments of the wrong form")
        return Node("call", entry[1], tuple(args), kwargs)
    if kind == "output" and len(entry) == 2:
        outputs = _argument(entry[1], position, 0)
        return Node("output", args=tuple(outputs) if type(outputs) is list else (outputs,))
    raise GraphRefused(f"node {position} is not a node the tracer writes")


@functools.lru_cache(maxsize=MAX_NODES)
def _ref(node: int) -> Ref:
    """One Ref per node index, shared by every graph (a Ref is immutable)."""
    return Ref(node)


@functools.lru_cache(maxsize=4096)
def _well_formed_target(target: str) -> bool:
    """A graph names a few dozen targets thousands of times: each is matched once."""
    return TARGET.match(target) is not None


def _constant_meta(meta, position: int) -> dict:
    if not (type(meta) is dict and set(meta) == {"shape", "dtype", "device"} and type(meta["shape"]) is list
            and len(meta["shape"]) <= 8 and all(type(n) is int and 0 <= n < 1 << 31 for n in meta["shape"])
            and meta["dtype"] in DTYPES and meta["device"] in DEVICES):
        raise GraphRefused(f"node {position}: a constant described wrongly")
    return meta


def _argument(value, position: int, depth: int):
    """One argument: a number, bool, None, short string, a reference to an earlier node, a tagged dtype,
    device, layout or memory format, a non-finite float, or a bounded list or keyword dict of those."""
    if depth > MAX_DEPTH:
        raise GraphRefused(f"node {position}: arguments nested deeper than {MAX_DEPTH}")
    kind = type(value)  # the kinds in the order a graph holds them most (its decoding is per node, per probe)
    if kind is int:
        if not -(1 << 63) <= value < 1 << 63:
            raise GraphRefused(f"node {position}: an integer out of range")
        return value
    if kind is dict and len(value) == 1 and "n" in value:
        if type(value["n"]) is int and 0 <= value["n"] < position:
            return _ref(value["n"])
        raise GraphRefused(f"node {position}: an argument the tracer never writes")
    if kind is list:
        if len(value) > MAX_LIST:
            raise GraphRefused(f"node {position}: a list of {len(value)} items")
        if depth >= MAX_DEPTH:
            return [_argument(item, position, depth + 1) for item in value]
        items = []
        for item in value:  # the commonest items, references and sizes, read here as `_argument` reads them
            kind = type(item)
            if kind is int and -(1 << 63) <= item < 1 << 63:
                items.append(item)
            elif kind is dict and len(item) == 1 and type(item.get("n")) is int and 0 <= item["n"] < position:
                items.append(_ref(item["n"]))
            else:
                items.append(_argument(item, position, depth + 1))
        return items
    if value is None or kind is bool or kind is float:
        return value
    if kind is str:
        if len(value) > 256:
            raise GraphRefused(f"node {position}: a string of {len(value)} characters")
        return value
    if kind is dict and len(value) == 1:
        (key, item), = value.items()
        if key == "float" and item in FLOATS:
            return FLOATS[item]
        if key == "kwargs" and type(item) is dict and len(item) <= 32 and all(type(k) is str for k in item):
            return {k: _argument(v, position, depth + 1) for k, v in item.items()}
        allowed = {"dtype": DTYPES, "device": DEVICES, "layout": LAYOUTS, "memory_format": MEMORY_FORMATS}.get(key)
        if allowed and item in allowed:
            return Tagged(key, item)
    raise GraphRefused(f"node {position}: an argument the tracer never writes")


def verdicts(graph: Graph) -> dict[str, set[str]]:
    """The graph's targets by `ops.verdict`: {"forbidden": {...}, "unsupported": {...}} (allowed ones left out)."""
    found: dict[str, set[str]] = {"forbidden": {f"{name} (line {line})" for name, line in graph.built_in},
                                  "unsupported": set()}
    for target in graph.targets():
        kind = ops.verdict(target)
        if kind != "allowed":
            found[kind].add(target)
    return found
