"""Does the parent read a worker's graph as hostile data, and run only what it may, within bounds?

The graph is the one thing of the worker's that decides points (grader/graph/). These tests hand the
parent's checker graphs written by hand, as student code in the worker could write them, with no
worker at all: each layer of the checker alone (the decoder, the operator list, the size bounds, the
device follower, the zeroing of uninitialised memory).
"""
import json

import pytest
import torch

from grader.handin import parent_budget
from grader.graph import answers, bounds, decode, ops, run
from grader.graph.decode import GraphRefused
from grader.graph.devices import DeviceMixGuard
from grader.graph.run import GraphFailed
from grader.sandbox import tracing

pytestmark = pytest.mark.unit


def graph(nodes, inputs=1) -> decode.Graph:
    return decode.decode(json.dumps({"format": 1, "inputs": inputs, "nodes": nodes}).encode(), constants=1)


def call(target, *args, **kwargs):
    return ["call", target, list(args), {"kwargs": kwargs}]


def n(node):
    return {"n": node}


X = torch.arange(6.0).view(2, 3)


def test_a_recorded_function_runs_the_same_on_the_parents_inputs():
    def attention(q, k, v):
        w = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)
        return [w @ v, w]

    worker_inputs = [torch.randn(2, 4, 3) for _ in range(3)]
    text, constants = tracing.encode(tracing.trace(attention, worker_inputs))
    parsed = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    fresh = [torch.randn(2, 4, 3) for _ in range(3)]
    outputs, devices = run.run(parsed, fresh, constants)
    for got, wanted in zip(outputs, attention(*fresh)):
        torch.testing.assert_close(got, wanted)
    assert devices == ["cpu", "cpu"]


def test_a_value_computed_outside_the_recorder_is_a_constant_wrong_on_fresh_inputs():
    def outside(q):
        with torch.utils._python_dispatch._disable_current_modes():
            answer = q * 2
        return [answer]

    seen = torch.ones(3)
    text, constants = tracing.encode(tracing.trace(outside, [seen]))
    parsed = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    outputs, _ = run.run(parsed, [torch.full((3,), 5.0)], constants)
    assert torch.equal(outputs[0], torch.full((3,), 2.0)), "the worker's value, not the parent's input's"


@pytest.mark.parametrize("text", [b"not json", b'{"format": 1}', b'{"format": 2, "inputs": 0, "nodes": []}',
                                  b"[" * 100_000 + b"]" * 100_000])
def test_text_that_is_no_graph_is_refused(text):
    with pytest.raises(GraphRefused):
        decode.decode(text, 0)


@pytest.mark.parametrize("nodes", [
    [["input", 0], call("aten.mul.Tensor", n(2), 2), ["output", [n(1)]]],  # a reference forward
    [["input", 0], call("aten.mul.Tensor", n(0), {"pointer": 1}), ["output", [n(1)]]],  # a value of no known form
    [["input", 0], call("aten.mul.Tensor;import os", n(0), 2), ["output", [n(1)]]],  # a target that is no name
    [["input", 0], ["constant", 5, {"shape": [1], "dtype": "float32", "device": "cpu"}], ["output", [n(1)]]],
    [["input", 0], call("aten.mul.Tensor", n(0), 2)],  # no output
    [["input", 1], ["output", [n(0)]]],  # inputs out of order
], ids=["forward-reference", "unknown-value", "bad-target", "missing-constant", "no-output", "input-order"])
def test_a_malformed_graph_is_refused_before_anything_runs(nodes):
    with pytest.raises(GraphRefused):
        graph(nodes)


def test_a_graph_over_the_node_limit_is_refused():
    nodes = [["input", 0]] + [call("aten.neg.default", n(i)) for i in range(20_000)] + [["output", [n(1)]]]
    with pytest.raises(GraphRefused, match="20000"):
        graph(nodes)


@pytest.mark.parametrize("target", ["aten._scaled_dot_product_flash_attention_for_cpu.default",
                                    "aten.scaled_dot_product_attention.default", "aten._safe_softmax.default",
                                    "aten._native_multi_head_attention.default",
                                    "aten._scaled_dot_product_efficient_attention.default"])
def test_the_built_in_attention_is_forbidden_in_every_form(target):
    assert ops.verdict(target) == "forbidden"
    parsed = graph([["input", 0], call(target, n(0)), ["output", [n(1)]]])
    findings = answers.Findings()
    with pytest.raises(GraphRefused):
        answers._graph({"graph": _text(parsed), "constants": [torch.zeros(1)]}, findings)
    assert findings.forbidden == {target}


@pytest.mark.parametrize("target", ["aten.set_.source_Storage", "aten.from_file.default", "aten._local_scalar_dense_x.default",
                                    "prims.mul.default", "python.os.system", "aten.as_strided_scatter.default",
                                    "aten._print.default"])
def test_operators_off_the_list_are_not_run(target):
    assert ops.verdict(target) == "unsupported"
    with pytest.raises(GraphRefused):
        run.run(graph([["input", 0], call(target, n(0)), ["output", [n(1)]]]), [X], [torch.zeros(1)])


def _text(parsed: decode.Graph) -> torch.Tensor:
    nodes = []
    for node in parsed.nodes:
        if node.kind == "input":
            nodes.append(["input", node.index])
        elif node.kind == "call":
            nodes.append(["call", node.target, [n(a.node) if isinstance(a, decode.Ref) else a for a in node.args],
                          {"kwargs": {}}])
        else:
            nodes.append(["output", [n(a.node) for a in node.args]])
    text = json.dumps({"format": 1, "inputs": parsed.inputs, "nodes": nodes}).encode()
    return torch.frombuffer(bytearray(text), dtype=torch.uint8)


@pytest.mark.parametrize("nodes", [
    [["input", 0], call("aten.ones.default", [1 << 20, 1 << 20]), ["output", [n(1)]]],  # a size it is given
    [["input", 0], call("aten.view.default", n(0), [4096, 1]), call("aten.view.default", n(0), [1, 4096]),
     call("aten.mul.Tensor", n(1), n(2)), ["output", [n(3)]]],  # a broadcast of its inputs
    [["input", 0], call("aten.view.default", n(0), [4096, 1]), call("aten.view.default", n(0), [1, 4096]),
     call("aten.mm.default", n(1), n(2)), ["output", [n(3)]]],  # a product of matrices
    [["input", 0], call("aten.einsum.default", "i,j->ij", [n(0), n(0)]), ["output", [n(1)]]],  # shaped on meta
], ids=["size", "broadcast", "matrix-product", "einsum"])
def test_a_node_that_would_allocate_past_the_bound_is_refused_before_it_runs(nodes, monkeypatch):
    monkeypatch.setattr(bounds, "MAX_ELEMENTS", 1 << 22)  # 4096 x 4096 is over a bound of 4 M elements
    ran, call_for_real = [], run._call
    monkeypatch.setattr(run, "_call", lambda target, *rest: ran.append(target) or call_for_real(target, *rest))
    with pytest.raises(GraphRefused, match="would make"):
        run.run(graph(nodes), [torch.zeros(4096)], [torch.zeros(1)])
    assert ran == [node[1] for node in nodes[1:-2]], ran  # the node over the bound never ran


@pytest.mark.parametrize("target, args", [("aten.empty_strided.default", [[64, 1], [1 << 22, 1]]),
                                          ("aten.new_empty_strided.default", [n(0), [64, 1], [1 << 22, 1]]),
                                          ("aten.as_strided.default", [n(0), [64, 1], [1 << 22, 1]])])
def test_strides_that_reach_past_the_bound_are_refused_before_anything_is_allocated(target, args, monkeypatch):
    """64 elements whose strides span 63 x 4 M: the storage under them, not their count, is what gets allocated."""
    monkeypatch.setattr(bounds, "MAX_ELEMENTS", 1 << 22)
    with pytest.raises(GraphRefused, match="would make"):
        run.run(graph([["input", 0], call(target, *args), ["output", [n(1)]]]), [torch.zeros(3)], [torch.zeros(1)])


def test_the_documented_bound_on_one_tensor_is_64_mebi_elements():
    assert bounds.MAX_ELEMENTS == 64 * 2 ** 20


def test_uninitialised_memory_never_reaches_a_result():
    for target, args in [("aten.empty.memory_format", [[64, 64]]), ("aten.empty_like.default", [n(0)]),
                         ("aten.new_empty_strided.default", [n(0), [64, 64], [64, 1]])]:
        outputs, _ = run.run(graph([["input", 0], call(target, *args), ["output", [n(1)]]]), [torch.ones(64, 64)],
                             [torch.zeros(1)])
        assert not outputs[0].any(), target


def test_uninitialised_memory_between_strides_never_reaches_a_result():
    """A tensor with gaps between its strides owns a storage larger than its elements; a view over the whole
    storage must find zeros there too, never what the parent's memory held."""
    for target, args in [("aten.empty_strided.default", [[2], [4096]]),
                         ("aten.new_empty_strided.default", [n(0), [2], [4096]])]:
        nodes = [["input", 0], call(target, *args), call("aten.as_strided.default", n(1), [4097], [1]),
                 ["output", [n(2)]]]
        outputs, _ = run.run(graph(nodes), [torch.ones(3)], [torch.zeros(1)])
        assert not outputs[0].any(), target


def test_a_cpu_mask_meets_inputs_on_the_stand_in_and_fails_as_on_a_gpu():
    mask = [["input", 0], call("aten.ones.default", [2, 3], dtype={"dtype": "bool"}, device={"device": "cpu"}),
            call("aten.masked_fill.Scalar", n(0), n(1), 0.0), ["output", [n(2)]]]
    with pytest.raises(GraphFailed, match="found at least two devices, meta and cpu.*shapes of the cpu operands: \\[2, 3\\]"):
        run.run(graph(mask), [X], [torch.zeros(1)], devices=["meta"])
    followed = [["input", 0], call("aten.ones.default", [2, 3], dtype={"dtype": "bool"}, device={"device": "meta"}),
                call("aten.masked_fill.Scalar", n(0), n(1), 0.0), ["output", [n(2)]]]
    outputs, devices = run.run(graph(followed), [X], [torch.zeros(1)], devices=["meta"])
    assert devices == ["meta"] and not outputs[0].any()
    scalar = [["input", 0], call("aten.scalar_tensor.default", 2.0, device={"device": "cpu"}),
              call("aten.mul.Tensor", n(0), n(1)), ["output", [n(2)]]]  # a CPU scalar mixes legitimately
    assert run.run(graph(scalar), [X], [torch.zeros(1)], devices=["meta"])[1] == ["meta"]


def test_a_cpu_scalar_written_from_the_stand_in_fails_as_on_a_gpu():
    """A CPU scalar mixes as an operand only: written into in place from a GPU tensor (`total += loss`), a GPU raises
    (red team on the second lab: a CPU count added to from k kept the device point on the stand-ins). A 0-dim tensor on
    the stand-in decides the device of what it meets there, as a GPU's does."""
    written = [["input", 0], call("aten.zeros.default", [], device={"device": "cpu"}),
               call("aten.sum.default", n(0)), call("aten.add_.Tensor", n(1), n(2)), ["output", [n(3)]]]
    with pytest.raises(GraphFailed, match="found at least two devices, meta and cpu.*shapes of the cpu operands: \\[\\]"):
        run.run(graph(written), [X], [torch.zeros(1)], devices=["meta"])
    operand = [["input", 0], call("aten.zeros.default", [], device={"device": "cpu"}),
               call("aten.sum.default", n(0)), call("aten.add.Tensor", n(1), n(2)), ["output", [n(3)]]]
    assert run.run(graph(operand), [X], [torch.zeros(1)], devices=["meta"])[1] == ["meta"]
    with DeviceMixGuard(), pytest.raises(RuntimeError, match="found at least two devices, meta and cpu"):
        torch.zeros(()).add_(torch.ones(3, device="meta").sum())  # the worker's guard on the stand-in says the same
    with DeviceMixGuard():
        assert (torch.zeros(()) + torch.ones(3, device="meta").sum()).device.type == "meta"


def test_an_integer_product_on_the_stand_in_fails_as_on_a_gpu():
    """A GPU has no integer matrix product; the meta device and the CPU compute one (red team on the first lab: code
    that caught the GPU's error left its mask on the CPU in the `except` branch). On the CPU it stays a product."""
    product = [["input", 0], call("aten.ones.default", [2, 2], dtype={"dtype": "int64"}, device={"device": "meta"}),
               call("aten.mm.default", n(1), n(1)), ["output", [n(2)]]]
    with pytest.raises(GraphFailed, match="not implemented for 'int64'"):
        run.run(graph(product), [X], [torch.zeros(1)], devices=["meta"])
    with DeviceMixGuard(), pytest.raises(RuntimeError, match="not implemented for 'int64'"):
        torch.ones(2, 2, dtype=torch.long, device="meta") @ torch.ones(2, 2, dtype=torch.long, device="meta")
    on_the_cpu = [["input", 0], call("aten.ones.default", [2, 2], dtype={"dtype": "int64"}, device={"device": "cpu"}),
                  call("aten.mm.default", n(1), n(1)), ["output", [n(2)]]]
    assert run.run(graph(on_the_cpu), [X], [torch.zeros(1)], devices=["meta"])[0][0].tolist() == [[2, 2], [2, 2]]


def test_getitem_takes_only_an_element_of_a_list_of_results():
    with pytest.raises(GraphRefused):
        run.run(graph([["input", 0], call("getitem", n(0), 0), ["output", [n(1)]]]), [X], [torch.zeros(1)])


def test_the_parents_inputs_are_never_edited_by_a_graph():
    inputs = [X.clone()]
    run.run(graph([["input", 0], call("aten.mul_.Tensor", n(0), 0.0), ["output", [n(1)]]]), inputs, [torch.zeros(1)])
    assert torch.equal(inputs[0], X)


def _module_call(function, inputs) -> dict:
    """A traced module call as the worker's mha probe answers it (no parameters, no gradients)."""
    text, constants = tracing.encode(tracing.trace(function, inputs))
    return {"graph": text, "constants": constants, "structure": {"kind": "tensor"},
            "outputs": [{"kind": "tensor", "requires_grad": False}]}


@pytest.mark.parametrize("second", [lambda q, k, v, first: [first], lambda q, k, v, first: [first + 0 * q.sum()]],
                         ids=["the-first-result", "the-first-result-plus-zero-times-the-input"])
def test_a_repeated_call_that_remembers_the_first_ones_result_is_counted_as_the_first(second):
    """The op count of a repeated call forgives what the first call cached (a mask), not a result replayed from
    it: a second graph that gives other values than the first on the parent's inputs is counted as the first."""
    worker = [torch.randn(2, 4, 8) for _ in range(3)]

    def looped(q, k, v):
        return [torch.cat([q[:, i:i + 1] * k[:, i:i + 1] + v[:, i:i + 1] for i in range(q.size(1))], dim=1)]

    remembered = looped(*worker)[0]
    calls = _repeated(looped, lambda q, k, v: second(q, k, v, remembered), worker)
    assert calls[0]["ops"] > 8 and calls[1]["ops"] == calls[0]["ops"], calls


def test_a_repeated_call_that_returns_no_tensor_is_counted_as_the_first():
    worker = [torch.randn(2, 4, 8) for _ in range(3)]
    calls = _repeated(lambda q, k, v: [torch.cat([q[:, i:i + 1] for i in range(4)], dim=1)], lambda q, k, v: [],
                      worker, second_structure={"kind": "NoneType"})
    assert calls[1]["ops"] == calls[0]["ops"] > 4, calls


def test_a_repeated_call_that_reuses_a_cached_mask_keeps_its_own_count():
    worker = [torch.randn(2, 4, 8) for _ in range(3)]
    calls = _repeated(lambda q, k, v: [q * k + v + torch.ones(4, 8).tril().mul(0)], lambda q, k, v: [q * k + v],
                      worker)
    assert calls[1]["ops"] < calls[0]["ops"], calls


def _repeated(first, second, worker, second_structure=None) -> list[dict]:
    """The parent's answer to one module call made twice, the worker's graphs traced from `first` and `second`."""
    request = {"q": torch.randn(2, 4, 8), "k": torch.randn(2, 4, 8), "v": torch.randn(2, 4, 8), "seed": 0}
    fields = {"calls": [request, request], "device": "cpu", "grad": False, "count_ops": True, "weights": None,
              "args": {"dim": 8, "n_heads": 2, "dropout": 0.0, "max_seq_len": 16}}
    traced = {"state": {"names": [], "parameters": 0, "values": [], "meta": []},
              "calls": [_module_call(first, worker), _module_call(second, worker)]}
    if second_structure:
        traced["calls"][1]["structure"] = second_structure
    return answers.mha(traced, fields, answers.Findings())["calls"]


def _part_one_on_the_stand_in(function) -> dict:
    """Part 1's answer for a graph traced on the meta stand-in (as the worker traces it), run by the parent."""
    worker = [torch.randn(2, 4, 8, device="meta") for _ in range(3)]
    text, constants = tracing.encode(tracing.trace(function, worker))
    traced = {"graph": text, "constants": constants, "structure": {"kind": "tuple", "length": 2},
              "outputs": [{"kind": "tensor"}, {"kind": "tensor"}]}
    fields = {"Q": torch.randn(2, 4, 8), "K": torch.randn(2, 4, 8), "V": torch.randn(2, 4, 8), "device": "meta",
              "layout": "contiguous", "grad": False, "count_ops": False, "gradcheck": False, "cotangent": None}
    return answers.sdpa(traced, fields, answers.Findings())


def test_on_the_stand_in_an_output_keeps_its_values_when_every_value_of_the_graph_is_known():
    """Values the parent computed itself (no constant made on the meta device, which has none) are kept, so the
    device check can hold them against the same code's CPU output: zeros on a GPU are not attention."""
    answer = _part_one_on_the_stand_in(lambda q, k, v: [torch.zeros_like(v), torch.zeros(2, 4, 4, device=q.device)])
    assert answer["out"]["device"] == "meta" and torch.equal(answer["out"]["value"], torch.zeros(2, 4, 8))
    made_before = torch.ones(4, device="meta")
    answer = _part_one_on_the_stand_in(lambda q, k, v: [v * made_before[0], torch.zeros(2, 4, 4, device=q.device)])
    assert answer["out"]["device"] == "meta" and "value" not in answer["out"]


def test_a_long_graph_is_stopped_by_the_submissions_budget_while_it_runs():
    steps = [call("aten.mm.default", n(i), n(0)) for i in range(4000)]
    long_graph = graph([["input", 0], *steps, ["output", [n(len(steps))]]])
    with parent_budget.charged(parent_budget.ParentBudget(cpu_seconds=0.05)):
        with pytest.raises(parent_budget.OverBudget):
            run.run(long_graph, [torch.eye(48)], [torch.zeros(1)])
    assert run.run(long_graph, [torch.eye(48)], [torch.zeros(1)])[0][0].equal(torch.eye(48))  # uncharged: it runs
