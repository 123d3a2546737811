"""Run a checked graph in the parent, on inputs the worker never saw.

Each node's operator is resolved here, once `ops.verdict` says it can be bounded, never from the graph's text. Before a node
runs, its results' shapes, strides and storage and its cost are known from a run on the meta device
(`bounds.plan`): no tensor over `bounds.MAX_ELEMENTS`, no view outside the storage it views, no more than
`MAX_GRAPH_BYTES` of new memory and `MAX_GRAPH_OPERATIONS` of work in one run of a graph, and no more than the
submission's own budget of operations over all its graphs (`parent_budget`). A graph over a cost is refused as
`submission-too-costly` (`GraphTooCostly`) before the node that would cross it runs; its real results are held
to what the meta run said. The submission's CPU and memory budget is read every few milliseconds of the run.
Devices are taken as the graph records them, so a mask the code made on the CPU meets inputs on the meta
stand-in (or a GPU) here, in the parent, and fails as it would on a GPU. On the stand-in the graph runs on the
CPU for real while each value carries the device the graph gives it (`_Devices`): an operator whose operands
of one or more dims sit on two devices raises as a GPU does (the worker's `DeviceMixGuard` says the same while
tracing, in the same words). Random operators (torch's `nondeterministic_seeded`) draw from the parent's
generator, seeded by the probe's seed. Storage an operator grows (`resize_`) is zeroed past its old end.
"""
from __future__ import annotations

import functools
import operator
import time

import torch

from grader.handin import parent_budget
from grader.graph import bounds, ops
from grader.graph.decode import Graph, GraphRefused, Node, Ref, Tagged
from grader.graph.devices import CPU_OPERAND_SHAPES, DeviceMixGuard, refused_by_a_gpu, written_operands

MAX_GRAPH_BYTES = 1 << 30
"""New memory one run of a graph may hold (its nodes' results are kept until it ends)."""
MAX_GRAPH_OPERATIONS = 4e10
"""Work one run of a graph may cost, in float32 multiply-adds (`bounds.cost`): about a second of one core."""
BUDGET_EVERY_SECONDS = 0.02
"""How often a run asks the submission's budget: reading it costs a read of /proc (tens of microseconds), more
than most nodes take, so it is read when this much wall time passed since the last reading, not at every node."""


class GraphTooCostly(parent_budget.OverBudget):
    """A graph whose next node would take it over its memory or work: the submission is too costly to judge."""

    def __init__(self, target: str, what_zh: str, what_en: str) -> None:
        super().__init__(f"提交的计算图在 {target} 处{what_zh}，评分程序不再运行它",
                         f"the submitted graph {what_en} at {target}; the grader does not run it")


class GraphFailed(Exception):
    """An operator raised while the parent ran the graph: what the student's code does on these inputs."""

    def __init__(self, error: BaseException, target: str) -> None:
        super().__init__(str(error))
        self.error = error
        self.target = target


@functools.lru_cache(maxsize=1024)
def _operator(target: str):
    """The operator a target names, once `ops.verdict` allows it (resolved once per name: a graph names a few
    dozen, thousands of times)."""
    if target == "getitem":
        return operator.getitem
    if ops.verdict(target) != "allowed":
        raise GraphRefused(f"the operator {target} is not allowed: {ops.why_unsupported(target)}")
    return ops.resolve(target)


def _tagged(value: Tagged, devices_followed: bool):
    """A dtype, device, layout or memory format as torch's object. Where devices are followed beside the values,
    every device is the CPU for the values, and the graph's device is the tracker's."""
    if value.kind == "dtype":
        return getattr(torch, value.name)
    if value.kind == "device":
        return torch.device("cpu" if devices_followed else value.name)
    if value.kind == "layout":
        return torch.strided
    return getattr(torch, value.name)


class _Devices:
    """The device each value of a run has in the graph, while the values themselves are computed on the CPU."""

    MOVES = DeviceMixGuard.ALLOWED

    def __init__(self) -> None:
        self.of: dict[int, str] = {}  # node -> device of its tensor value

    def label(self, target: str, node: int, args: list, kwargs: dict, values: list) -> None:
        leaves = _leaves([*args, *kwargs.values()])
        given = [v.name for v in leaves if isinstance(v, Tagged) and v.kind == "device"]
        operands = [(self.of.get(r.node, "cpu"), values[r.node]) for r in leaves
                    if isinstance(r, Ref) and isinstance(values[r.node], torch.Tensor)]
        packet = ops.packet(target)
        if packet not in self.MOVES:
            written = {r.node for r in written_operands(_operator(target), args, kwargs) if isinstance(r, Ref)}
            strays = [t for device, t in operands if device == "cpu" and t.dim() > 0]
            strays += [values[n] for n in written if self.of.get(n, "cpu") == "cpu"
                       and isinstance(values[n], torch.Tensor) and values[n].dim() == 0]  # a CPU scalar written into
            refused = refused_by_a_gpu(packet, [(device, t.dtype) for device, t in operands])
            if refused is not None:
                raise GraphFailed(RuntimeError(refused), target)
            if strays and any(device != "cpu" for device, _ in operands):
                other = next(device for device, _ in operands if device != "cpu")
                shapes = ", ".join(str(list(t.shape)) for t in strays[:4])
                raise GraphFailed(RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two devices, "
                    f"{other} and cpu! (in {packet}; {CPU_OPERAND_SHAPES} {shapes})"), target)
        if given:
            self.of[node] = given[-1]
        elif target == "getitem":
            self.of[node] = self.of.get(args[0].node, "cpu") if isinstance(args[0], Ref) else "cpu"
        else:
            # a GPU's rule: the first operand that is not a CPU scalar decides (a 0-dim CUDA tensor does)
            self.of[node] = next((device for device, t in operands if device != "cpu" or t.dim() > 0),
                                 operands[0][0] if operands else "cpu")


def _leaves(values, found: list | None = None) -> list:
    """What lists and keyword dicts hold, in order, at any depth (a tuple is a leaf: an operator's results)."""
    found = [] if found is None else found
    for value in values:
        if isinstance(value, list):
            _leaves(value, found)
        elif isinstance(value, dict):
            _leaves(value.values(), found)
        else:
            found.append(value)
    return found


class _Run:
    def __init__(self, graph: Graph, devices: _Devices | None, generator: torch.Generator) -> None:
        self.graph = graph
        self.values: list = [None] * len(graph.nodes)
        self.devices = devices
        self.generator = generator
        self.budget_read_at = time.monotonic()
        self.operations = 0.0
        self.allocated = 0

    def argument(self, value):
        kind = type(value)  # what the decoder makes, the commonest first
        if kind is Ref:
            return self.values[value.node]
        if kind is int or kind is float or kind is bool or value is None:
            return value
        if isinstance(value, Ref):
            return self.values[value.node]
        if isinstance(value, Tagged):
            return _tagged(value, self.devices is not None)
        if isinstance(value, list):
            return [self.argument(item) for item in value]
        if isinstance(value, dict):
            return {key: self.argument(item) for key, item in value.items()}
        return value

    def run(self, inputs: list, input_devices: list[str], constants: list, constant_devices: list[str]) -> list:
        for position, node in enumerate(self.graph.nodes):
            if node.kind == "input":
                self.values[position] = inputs[node.index]
                if self.devices:
                    self.devices.of[position] = input_devices[node.index]
            elif node.kind == "constant":
                self.values[position] = constants[node.index]
                if self.devices:
                    self.devices.of[position] = constant_devices[node.index]
            elif node.kind == "call":
                self.values[position] = self.step(position, node)
            else:
                return [self.argument(a) for a in node.args]
        raise GraphRefused("a graph without an output")

    def output_devices(self) -> list[str]:
        output = self.graph.nodes[-1]
        return [self.devices.of.get(a.node, "cpu") if isinstance(a, Ref) else "cpu" for a in output.args]

    def step(self, position: int, node: Node):
        if self.devices:
            self.devices.label(node.target, position, list(node.args), node.kwargs, self.values)
        values = self.values
        args = [values[a.node] if type(a) is Ref else self.argument(a) for a in node.args]
        kwargs = {key: self.argument(v) for key, v in node.kwargs.items()} if node.kwargs else {}
        planned = self.planned(node.target, args, kwargs)
        try:
            result = _call(node.target, args, kwargs, self.generator)
        except GraphRefused:
            raise
        except Exception as error:
            raise GraphFailed(error, node.target) from error
        if planned is None:
            raise GraphRefused(f"{node.target} ran where its meta kernel refused its arguments")
        _as_planned(node.target, result, planned)
        if time.monotonic() - self.budget_read_at > BUDGET_EVERY_SECONDS:
            parent_budget.check()
            self.budget_read_at = time.monotonic()
        return result

    def planned(self, target: str, args: list, kwargs: dict) -> bounds.Plan | None:
        """The node's plan, charged to the run and the submission before it runs; None where its meta run raised
        (the operator raises on these arguments: it runs for its own error message, under the bounds its
        arguments give)."""
        if target == "getitem":
            return bounds.Plan((), 0.0, 0)
        try:
            plan = bounds.plan(target, ops.packet(target), _operator(target), args, kwargs)
        except GraphRefused:
            raise
        except Exception:
            bounds.check_arguments(target, args, kwargs)
            return None
        self.operations += plan.cost
        self.allocated += plan.allocated_bytes
        if self.operations > MAX_GRAPH_OPERATIONS:
            raise GraphTooCostly(target, f"的计算量超过了 {MAX_GRAPH_OPERATIONS:.0e} 次乘加",
                                 f"would cost over {MAX_GRAPH_OPERATIONS:.0e} multiply-adds")
        if self.allocated > MAX_GRAPH_BYTES:
            raise GraphTooCostly(target, f"要分配的内存超过了 {MAX_GRAPH_BYTES >> 20} MiB",
                                 f"would allocate over {MAX_GRAPH_BYTES >> 20} MiB")
        parent_budget.spend_operations(plan.cost)
        return plan


def _as_planned(target: str, result, plan: bounds.Plan) -> None:
    """The real results are those the meta run planned (a kernel that disagrees with its meta kernel is not
    trusted further), every view inside its storage."""
    if target == "getitem":
        return
    results = result if isinstance(result, (list, tuple)) else (result,)
    if not plan.made:  # sized by its values (bounds.DATA_DEPENDENT): within the bound its rule gave
        for value in results:
            if isinstance(value, torch.Tensor):
                bounds.check_made(target, bounds.described(value, True))
        return
    for value, made in zip(results, plan.made):
        if isinstance(value, torch.Tensor):
            if made is None or tuple(value.shape) != made.shape:
                raise GraphRefused(f"{target} made a tensor of another shape than its meta kernel said")
            bounds.check_made(target, bounds.described(value, made.new_storage))


def _call(target: str, args: list, kwargs: dict, generator: torch.Generator):
    if target == "getitem":
        if not (len(args) == 2 and isinstance(args[0], (list, tuple)) and type(args[1]) is int):
            raise GraphRefused("getitem on something that is no list of results")
        return args[0][args[1]]
    operator_ = _operator(target)
    packet = ops.packet(target)
    if ops.draws_random(target):
        return _random(packet, operator_, args, kwargs, generator)
    grown = _storage_bytes(args[0]) if args and isinstance(args[0], torch.Tensor) else None
    result = operator_(*args, **kwargs)
    if packet in ops.UNINITIALISED:
        result.untyped_storage().fill_(0)  # the whole storage: strides with gaps own bytes no element shows
    elif grown is not None and _storage_bytes(args[0]) > grown:  # resize_: the new bytes are the parent's memory
        _zero_past(args[0].untyped_storage(), grown)
    return result


def _storage_bytes(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().nbytes()


def _zero_past(storage: torch.UntypedStorage, start: int) -> None:
    tail = storage.nbytes() - start
    torch.empty(0, dtype=torch.uint8).set_(storage, start, (tail,), (1,)).zero_()


def _random(packet: str, operator_, args: list, kwargs: dict, generator: torch.Generator):
    """A random operator drawing from `generator`: given to it where its schema (or its packet's overload with the
    same arguments) takes one, else drawn here as the operator draws (nn.Dropout reaches `bernoulli_`; the same seed
    gives the worker's draw)."""
    drawing = ops.drawing(operator_, packet)
    if drawing not in (None, "here"):
        return drawing(*args, **{**kwargs, "generator": generator})
    like = args[0]
    if packet in ("rand_like", "randn_like"):
        draw = torch.rand if packet == "rand_like" else torch.randn
        return draw(like.shape, generator=generator, dtype=kwargs.get("dtype") or like.dtype, device=like.device)
    if packet == "native_dropout":
        p, train = args[1], args[2]
        if not train:
            return like.clone(), torch.ones_like(like, dtype=torch.bool)
        kept = torch.empty_like(like).bernoulli_(1 - p, generator=generator)
        return like * kept * (1.0 / (1 - p) if p < 1 else 0.0), kept.bool()
    raise GraphRefused(f"the random operator {packet} without a generator")


def run(graph: Graph, inputs: list[torch.Tensor], constants: list[torch.Tensor], *, seed: int | None = None,
        devices: list[str] | None = None, constant_devices: list[str] | None = None) -> tuple[list, list[str]]:
    """The graph's outputs on `inputs`, and the device each output has in the graph.

    `devices`, when given, is the device each input has in the graph (the stand-in's "meta"): the values are
    computed on the CPU, the devices followed beside them. Raises GraphRefused for a graph over a bound or
    naming what it may not, GraphFailed for an operator that raised (the student's code raises there too)."""
    if len(inputs) != graph.inputs:
        raise GraphRefused(f"a graph of {graph.inputs} inputs given {len(inputs)}")
    tracker = _Devices() if devices is not None else None
    with torch.no_grad():
        runner = _Run(graph, tracker, torch.Generator().manual_seed(seed or 0))
        outputs = runner.run([t.clone() for t in inputs], devices or [], [t.clone() for t in constants],
                             constant_devices or ["cpu"] * len(constants))
        devices_out = runner.output_devices() if tracker else [t.device.type if isinstance(t, torch.Tensor) else "cpu"
                                                                for t in outputs]
        return outputs, devices_out
