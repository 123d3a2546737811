"""A traced answer turned into the answer the checks read, with every value computed here.

The worker answers a value probe with graphs (`grader/sandbox/graph_probes.py`). This module runs
them on the request's own tensors, which never left the parent, and writes the answer in the form
the checks have always read (`out`, `weights`, `grads`, `param_grads`, `ops`, `gradcheck`). Of the
worker's answer only facts that are no values are copied (the returned structure, an error raised
while tracing, whether an output needs grad, a module's parameter names); a fact it forged can cost
only that student's own checks. The operators in a graph are judged here too: the built-in
attention (`forbidden`), and operators the runner cannot bound (`unsupported`, `ops.unbounded`).
"""
from __future__ import annotations

import math

import torch

from grader.exercises.attention import PROJECTIONS
from grader.graph import bounds, decode, ops, run
from grader.graph.decode import GraphRefused
from grader.graph.devices import CPU_BESIDE_A_GPU, STAND_INS
from grader.graph.layouts import laid_out
from grader.graph.run import GraphFailed
from grader.graph.structure import of_call as structural_mismatches, plain_attributes

GRADCHECK_STEP, GRADCHECK_ATOL, GRADCHECK_RTOL = 1e-3, 1e-3, 1e-2


class Findings:
    """What the graphs of one grading showed about operators, by probe kind (the parent's own record).

    `decoded` may be shared by the findings of one grading: an answer's graph is run several times (counted, evaluated,
    moved for the gradient check, and again for each request that repeats its message) and is decoded and judged once."""

    def __init__(self, decoded: dict | None = None) -> None:
        self.forbidden: set[str] = set()
        self.unsupported: set[str] = set()
        self.refused: list[str] = []  # graphs refused as data, with the reason
        self.decoded: dict = {} if decoded is None else decoded  # (id(text), constants) -> (text, graph, verdicts)


def _error(kind: str, message: str) -> dict:
    return {"type": kind, "message": message[:4000], "where": None}


def _graph(traced: dict, findings: Findings) -> decode.Graph:
    text, constants = traced.get("graph"), traced.get("constants")
    if not (isinstance(text, torch.Tensor) and text.dtype == torch.uint8 and text.dim() == 1
            and isinstance(constants, list) and all(isinstance(c, torch.Tensor) for c in constants)):
        raise GraphRefused("an answer without a graph")
    key = (id(text), len(constants))
    known = findings.decoded.get(key)
    if known is None or known[0] is not text:  # the entry keeps its text alive, so no other tensor has its id
        graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
        known = findings.decoded[key] = (text, graph, decode.verdicts(graph))
    _, graph, kinds = known
    findings.forbidden |= kinds["forbidden"]
    findings.unsupported |= kinds["unsupported"]
    if kinds["forbidden"]:
        raise GraphRefused(f"the built-in attention ({', '.join(sorted(kinds['forbidden']))})")
    if kinds["unsupported"]:
        raise UnsupportedOperators(sorted(kinds["unsupported"]))
    return graph


class UnsupportedOperators(GraphRefused):
    def __init__(self, targets: list[str]) -> None:
        super().__init__(", ".join(targets))
        self.targets = targets


def _constants(traced: dict, graph: decode.Graph, device: str) -> tuple[list[torch.Tensor], list[str]]:
    """The graph's constants and their devices in it; one made on a stand-in has no values to send, and
    stands as zeros of its shape (only devices are read on the stand-in), all of them bounded before any is made."""
    constants, devices = list(traced["constants"]), ["cpu"] * len(traced["constants"])
    valueless = {}
    for node in graph.nodes:
        if node.kind == "constant":
            devices[node.index] = node.meta["device"]
            if _valueless(node, constants[node.index], device):
                valueless[node.index] = (node.meta["shape"], getattr(torch, node.meta["dtype"]))
    for index, zeros in zip(valueless, bounds.zeros(list(valueless.values()))):
        constants[index] = zeros
    return constants, devices


def _valueless(node: decode.Node, value: torch.Tensor | None, device: str) -> bool:
    """A constant of a graph traced on a stand-in that came without values: made on the stand-in's device (or
    on meta), or sent empty."""
    if node.meta["device"] == "meta":
        return True
    return device in STAND_INS and (node.meta["device"] != "cpu" or value is None
                                    or list(value.shape) != node.meta["shape"])


def evaluate(traced: dict, inputs: list[torch.Tensor], findings: Findings, seed: int | None = None,
             device: str = "cpu") -> tuple[list, list[str], dict | None]:
    """(outputs, their devices in the graph, None) or ([], [], error) for one traced call; the error is what
    the checks read from a probe. On a stand-in (`STAND_INS`) the values are the CPU's and devices are followed;
    an output on the stand-in's device is said to be on the stand-in."""
    if "error" in traced:
        return [], [], traced["error"]
    if _is_place(traced.get("untraceable")):
        return [], [], {"type": "Untraceable", "where": traced["untraceable"], "message": (
            "the result left the tensor operations here (a Python number, list or NumPy array, or a branch on a "
            "tensor's values), so it does not follow a change of inputs")}
    if _is_place(traced.get("unanswered")):  # on a stand-in: torch.cuda asked what only a GPU answers (stand_in_cuda)
        return [], [], {"type": "StandInCannotAnswer", "where": traced["unanswered"], "message": (
            "the code asked torch.cuda what the stand-in for a GPU of a machine without one cannot answer as a GPU "
            "would, so nothing about devices is judged on it")}
    if _is_place(traced.get("stand_in_raised")):  # an operator raised on a stand-in and the code went on
        return [], [], {"type": "StandInRaised", "where": traced["stand_in_raised"], "message": (
            "an operator raised on the stand-in for a GPU (which has no values, and no CUDA kernels) and the code "
            "caught it and went on: a GPU may not raise there, so nothing about devices is judged on it")}
    try:
        graph = _graph(traced, findings)
        constants, constant_devices = _constants(traced, graph, device)
        in_graph = STAND_INS.get(device)
        outputs, devices = run.run(graph, inputs, constants, seed=seed,
                                   devices=[in_graph] * len(inputs) if in_graph else None,
                                   constant_devices=constant_devices)
        return outputs, [device if in_graph and d == in_graph else d for d in devices], None
    except UnsupportedOperators as refused:
        reasons = "; ".join(f"{target}: {ops.why_unsupported(target)}" for target in refused.targets)
        return [], [], _error("UnsupportedOperator", f"graded code used an operator the grader cannot bound before "
                                                     f"running it (the operator is fine; the grader is the limit): {reasons}")
    except GraphRefused as refused:
        findings.refused.append(str(refused))
        return [], [], _error("GraphRefused", str(refused))
    except GraphFailed as failed:
        return [], [], _error(type(failed.error).__name__, str(failed.error))


def _is_place(where) -> bool:
    """A student's line as describe_error gives it: {"line": int, "text": str, "function": str}, bounded."""
    return (isinstance(where, dict) and set(where) == {"line", "text", "function"} and type(where["line"]) is int
            and all(type(where[key]) is str and len(where[key]) <= 1000 for key in ("text", "function")))


def ops_counted(traced: dict, findings: Findings) -> tuple[int, list[str]]:
    """Operator nodes in the forward graph: a Python loop over heads or positions multiplies them."""
    try:
        graph = _graph(traced, findings)
    except GraphRefused:
        return 0, []
    targets = [t for t in graph.targets() if t.startswith("aten.") and t.split(".")[1] not in ops.NOT_COUNTED]
    return len(targets), sorted({t.split(".")[1] for t in targets})


def described(tensor, fact: dict | None, device: str | None = None, known: bool = False) -> dict:
    """The checks' form of one output: kind, shape, dtype, device and the value, all the parent's own;
    whether it needed grad and whether it was a subclass come from the worker (facts, not values). An output on
    a stand-in has a device and no value, as a meta tensor has, unless every value of its graph is `known`."""
    fact = fact if isinstance(fact, dict) else {}
    if not isinstance(tensor, torch.Tensor):
        return {"kind": str(fact.get("kind", "none"))}
    device = device or tensor.device.type
    info = {"kind": "tensor", "shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."),
            "device": device, "requires_grad": fact.get("requires_grad") is True, "subclass": fact.get("subclass") is True}
    if device not in STAND_INS or known:
        info["value"] = tensor.detach().to("cpu").clone()
    return info


def _known_on_the_stand_in(traced: dict, device: str) -> bool:
    """Whether the parent computed every value of a graph traced on a stand-in: its inputs are the parent's own
    and what the call made it computed on the CPU; only a constant made on the stand-in has no value (zeros)."""
    graph = decode.decode(bytes(traced["graph"].numpy().tobytes()), len(traced["constants"]))
    return not any(node.kind == "constant" and _valueless(node, traced["constants"][node.index], device)
                   for node in graph.nodes)


def _facts(traced: dict) -> list:
    outputs = traced.get("outputs")
    return outputs if isinstance(outputs, list) else []


def sdpa(traced: dict, fields: dict, findings: Findings) -> dict:
    """Part 1's answer from its graph: out, weights, and with `grad` d(out)/d(Q, K, V) from the joint graph."""
    answer = {"structure": traced.get("structure") if isinstance(traced.get("structure"), dict) else {}}
    inputs = _placed([fields["Q"], fields["K"], fields["V"]], fields["device"], fields["layout"])
    extra = [_to(fields["cotangent"], fields["device"])] if fields["grad"] else []
    if fields["count_ops"] and "error" not in traced:
        answer["ops"], answer["op_names"] = ops_counted(traced, findings)
    outputs, devices, error = evaluate(traced, inputs + extra, findings, device=fields["device"])
    if error:
        answer["error"] = error
        return answer
    facts = _facts(traced)
    if answer["structure"].get("length") != 2 or len(outputs) < 2:
        return answer
    known = fields["device"] not in STAND_INS or _known_on_the_stand_in(traced, fields["device"])
    answer["out"], answer["weights"] = (described(outputs[i], facts[i] if len(facts) > i else None, devices[i], known)
                                        for i in (0, 1))
    if fields["grad"]:
        answer["grads"] = _grads(traced, outputs[2:], 3)
        if fields["gradcheck"] and answer["grads"] is not None:
            answer["gradcheck"] = _gradcheck(traced, inputs, extra[0], answer["grads"], findings)
    return answer


def _grads(traced: dict, values: list, count: int) -> list | None:
    """The gradients a joint graph returned, one per input (None where the output does not use it)."""
    present = traced.get("grads_present")
    if not (isinstance(present, list) and len(present) == count and all(type(p) is bool for p in present)):
        return None
    values = iter(values)
    return [described(next(values, None), {}) if used else None for used in present]


def _gradcheck(traced: dict, inputs: list, cotangent, grads: list, findings: Findings) -> dict:
    """The joint graph's gradients against central differences of its own forward, along one random direction
    (torch.autograd.gradcheck's fast mode, done here on the graph): a backward that does not match its forward."""
    g = torch.Generator().manual_seed(12345)
    directions = [torch.randn(t.shape, generator=g, dtype=t.dtype) for t in inputs]
    moved = []
    for sign in (1, -1):
        outputs, _, error = evaluate(traced, [t + sign * GRADCHECK_STEP * u for t, u in zip(inputs, directions)]
                                     + [cotangent], findings)
        if error:
            return {"passed": False, "error": error}
        moved.append(outputs[0])
    numerical = float((cotangent * (moved[0] - moved[1])).sum()) / (2 * GRADCHECK_STEP)
    analytical = sum(float((grad["value"] * u).sum()) for grad, u in zip(grads, directions)
                     if grad is not None and "value" in grad)
    if math.isfinite(numerical) and abs(numerical - analytical) <= GRADCHECK_ATOL + GRADCHECK_RTOL * abs(numerical):
        return {"passed": True}
    return {"passed": False, "error": _error(
        "GradcheckError", f"Jacobian mismatch: the backward gives {analytical:.6g} along a random direction, "
                          f"central differences of the forward give {numerical:.6g}")}


def _to(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """An input where the graph runs: the CPU stands in for a stand-in (`run.run` follows its device)."""
    return tensor if device in STAND_INS or device == CPU_BESIDE_A_GPU else tensor.to(device)


def _placed(tensors: list, device: str, layout: str) -> list:
    return [laid_out(_to(t, device), layout) for t in tensors]


def mha(traced: dict, fields: dict, findings: Findings) -> dict:
    """Part 2's answer: each call's graph run with the request's weights in place of the module's own."""
    answer: dict = {"calls": []}
    if "error" in traced:
        answer["error"] = traced["error"]
        return answer
    if isinstance(traced.get("state_keys"), list):
        answer["state_keys"] = traced["state_keys"]
    answer["made_by_a_call"] = plain_attributes(traced, "made_by_a_call")  # on the CPU, before the move
    try:
        state = _state(traced.get("state"), fields)
    except GraphRefused as refused:  # values that did not come, described over the bounds
        findings.refused.append(str(refused))
        state = None
    if state is None:
        answer["error"] = _error("GraphRefused", "the module's parameters were described wrongly")
        return answer
    tensors, names, n_parameters, state_known = state
    calls = traced.get("calls") if isinstance(traced.get("calls"), list) else []
    for call, result in zip(fields["calls"], calls):
        answer["calls"].append(_mha_call(result if isinstance(result, dict) else {}, call, fields, tensors, names,
                                         n_parameters, findings, state_known))
    _count_repeats_as_first(fields["calls"], answer["calls"])
    return answer


def _count_repeats_as_first(requested: list, answered: list) -> None:
    """A call repeated with the same inputs is counted on its own (what the first call cached, a mask, is no loop)
    only when it computes what the first did: a graph that gives other values on these inputs replayed a result
    remembered from the first call, and the loop that made it is counted."""
    for position, (call, result) in enumerate(zip(requested, answered)):
        first = next(i for i, earlier in enumerate(requested) if earlier is call)
        if first < position and "ops" in result and "ops" in answered[first] \
                and not same_values(result.get("out"), answered[first].get("out")):
            result["ops"] = max(result["ops"], answered[first]["ops"])


def same_values(one, other) -> bool:
    """Two described outputs with equal values (NaN where the other has NaN); neither with a value (the stand-in's)
    is no difference, one without (a tensor against None) is."""
    a, b = (value.get("value") if isinstance(value, dict) else None for value in (one, other))
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6, equal_nan=True))


def _mha_call(traced: dict, call: dict, fields: dict, state: list, names: list, n_parameters: int,
              findings: Findings, state_known: bool) -> dict:
    result: dict = {}
    inputs = [_to(call[name], fields["device"]) for name in ("q", "k", "v")]
    extra = [_to(fields["cotangent"], fields["device"])] if fields["grad"] else []
    if fields["count_ops"] and "error" not in traced:
        result["ops"], result["op_names"] = ops_counted(traced, findings)
    outputs, devices, error = evaluate(traced, inputs + state + extra, findings, seed=call.get("seed", 0),
                                       device=fields["device"])
    if error:
        result["error"] = error
        return result
    facts = _facts(traced)
    structure = traced.get("structure") if isinstance(traced.get("structure"), dict) else {}
    if structure.get("kind") != "tensor":  # forward returns one tensor; anything else is named by what it was
        result["out"] = {"kind": str(structure.get("kind", "none"))[:200]}
        return result
    known = fields["device"] not in STAND_INS or (state_known and _known_on_the_stand_in(traced, fields["device"]))
    if not fields["grad"]:
        result["structural"] = structural_mismatches(_graph(traced, findings), call, names, fields["args"]["n_heads"])
    result["out"] = described(outputs[0] if outputs else None, facts[0] if facts else None,
                              devices[0] if devices else None, known)
    if fields["grad"] and result["out"].get("kind") == "tensor":
        grads = _grads(traced, outputs[1:], 3 + n_parameters)
        if grads is None:
            result["grads"] = None
        else:
            result["grads"] = grads[:3]
            by_name = dict(zip(names, grads[3:]))
            result["param_grads"] = {name: by_name.get(f"{name}.weight") for name in PROJECTIONS}
    return result


def _state(state, fields: dict) -> tuple[list, list, int, bool] | None:
    """The module's parameters and buffers as graph inputs: the request's weights where it gives them
    (`wq.weight` …), the module's own values elsewhere (its mask buffer, biases). On the stand-in those are the
    values the module held before it was moved there (the worker sends them), zeros where none came; the last
    item says whether every value is known, so that the output can be held against the CPU's."""
    if not (isinstance(state, dict) and isinstance(state.get("names"), list) and type(state.get("parameters")) is int
            and isinstance(state.get("values"), list) and isinstance(state.get("meta"), list)
            and len(state["names"]) == len(state["values"]) == len(state["meta"])
            and all(type(n) is str for n in state["names"]) and 0 <= state["parameters"] <= len(state["names"])):
        return None
    weights = fields.get("weights") or {}
    tensors, known, valueless = [], True, {}
    for name, value, meta in zip(state["names"], state["values"], state["meta"]):
        if not (isinstance(meta, dict) and isinstance(meta.get("shape"), list) and meta.get("dtype") in decode.DTYPES
                and isinstance(value, torch.Tensor)):
            return None
        dtype = getattr(torch, meta["dtype"])
        owner, _, leaf = name.rpartition(".")
        if leaf == "weight" and owner in weights:
            value = weights[owner]
        elif fields["device"] not in STAND_INS and list(value.shape) != meta["shape"]:
            return None
        if fields["device"] in STAND_INS and not (leaf == "weight" and owner in weights) \
                and list(value.shape) != meta["shape"]:
            valueless[len(tensors)], known = (meta["shape"], dtype), False  # no values came: only devices are read
        else:
            value = _to(value.to(dtype=dtype), fields["device"])
        tensors.append(value)
    for position, zeros in zip(valueless, bounds.zeros(list(valueless.values()))):
        tensors[position] = zeros
    return tensors, state["names"], state["parameters"], known
