"""Is every size a graph asks for known, and refused, before the parent allocates it or spends its CPU?

Each route the red team took against the graph runner is rebuilt here as data, as a worker could forge it, and
run in a child forked from this process: a route that got through would crash it (a view past its storage), or
take gigabytes or seconds (a result larger than its inputs' broadcast, a constant rebuilt as zeros of any shape,
a complex product). The child measures its own peak memory (VmHWM, reset when it starts) and CPU time, and the
test holds them under the parent's documented budget per hand-in (2 GiB, 30 s), far above what a refusal costs.
"""
import json
import os
import resource
import time

import pytest
import torch

from grader import grade as grading
from grader.checks import Check, Outcome
from grader.graph import answers, decode, run
from grader.graph.decode import GraphRefused
from grader.handin import parent_budget
from grader.handin.source import load_submission
from support.paths import ROOT

pytestmark = pytest.mark.unit

BUDGET_BYTES = 2 << 30  # the parent's documented memory per hand-in (docs/isolation.md)
BUDGET_SECONDS = 30.0  # and its CPU


def graph(nodes, inputs=1, constants=1) -> decode.Graph:
    return decode.decode(json.dumps({"format": 1, "inputs": inputs, "nodes": nodes}).encode(), constants=constants)


def call(target, *args, **kwargs):
    return ["call", target, list(args), {"kwargs": kwargs}]


def n(node):
    return {"n": node}


def _high_water_kib() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def in_a_child(route) -> dict:
    """What `route()` raised in a forked child (its class and message), with the child's peak memory growth and
    CPU time; {"signal": N} when the child died of one. The child may map at most 3 GiB more than it holds and
    spend the budget's CPU time, so a route that got through fails there instead of taking the machine's memory
    or running for hours."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(reader)
        try:
            with open("/proc/self/clear_refs", "w") as clear:
                clear.write("5")  # VmHWM from here
            with open("/proc/self/statm") as statm:
                mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (mapped + (3 << 30), resource.RLIM_INFINITY))
            used = resource.getrusage(resource.RUSAGE_SELF)
            resource.setrlimit(resource.RLIMIT_CPU, (int(used.ru_utime + used.ru_stime + BUDGET_SECONDS) + 1,
                                                     resource.RLIM_INFINITY))
            start_kib, start_cpu = _high_water_kib(), time.process_time()
            try:
                route()
                outcome = {"raised": None, "message": ""}
            except BaseException as error:  # noqa: BLE001 - whatever it was, the parent reads it
                outcome = {"raised": type(error).__name__, "message": str(error)[:300],
                           "mistake": getattr(error, "mistake", None)}
            outcome.update(grown=(_high_water_kib() - start_kib) << 10, cpu=time.process_time() - start_cpu)
            os.write(writer, json.dumps(outcome).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        text = pipe.read()
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        return {"signal": os.WTERMSIG(status)}
    return json.loads(text)


def assert_refused_within_budget(outcome: dict, raised: str, message: str) -> None:
    assert outcome.get("raised") == raised and message in outcome["message"], outcome
    assert outcome["grown"] < BUDGET_BYTES and outcome["cpu"] < BUDGET_SECONDS, outcome
    assert outcome["grown"] < 64 << 20, outcome  # refused before allocating: nothing near the budget was taken


def test_strides_past_the_storage_are_refused_before_a_view_is_made():
    """The red team's four nodes: `_reshape_alias` with strides [0, 2**40] over 6 elements, then a clone that
    would read 8 TiB past them. Bounding the stride list by its product let it through and the parent died."""
    forged = graph([["input", 0], call("aten._reshape_alias.default", n(0), [2, 3], [0, 1 << 40]),
                    call("aten.clone.default", n(1)), ["output", [n(2)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(6)], [torch.zeros(1)]))
    assert_refused_within_budget(outcome, "GraphRefused", "view reaching storage elements")


@pytest.mark.parametrize("target, args", [
    ("aten.as_strided.default", [n(0), [2, 3], [1, 3], 2]),  # an offset that leaves the storage
    ("aten._reshape_alias.default", [n(0), [3, 2], [2, 2]]),  # strides that reach one element past its end
    ("aten.as_strided.default", [n(1), [8], [1]]),  # a view of a view, past the storage they share
], ids=["offset", "strides", "view-of-a-view"])
def test_every_view_lies_inside_the_storage_it_views(target, args):
    forged = graph([["input", 0], call("aten.slice.Tensor", n(0), 0, 0, 2), call(target, *args),
                    call("aten.clone.default", n(2)), ["output", [n(3)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(6)], [torch.zeros(1)]))
    assert_refused_within_budget(outcome, "GraphRefused", "view reaching storage elements")


def test_an_index_larger_than_the_broadcast_of_its_inputs_is_refused_before_it_runs():
    """Rows of a (1, 8192) tensor picked by a (64, 256) index: inputs whose broadcast is 2 Mi elements, a result
    of 128 Mi (512 MiB of float32; the red team's took 4.4 GiB). The output's own shape, from the meta run, is
    what is bounded."""
    forged = graph([["input", 0], call("aten.view.default", n(0), [1, 8192]),
                    call("aten.zeros.default", [64, 256], dtype={"dtype": "int64"}),
                    call("aten.index.Tensor", n(1), [n(2)]), ["output", [n(3)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(8192)], [torch.zeros(1)]))
    assert_refused_within_budget(outcome, "GraphRefused", "134217728 elements")


@pytest.mark.parametrize("counts, message", [
    ([2**62] * 4, "counts that total more than 67108864 elements"),  # int64's sum wraps to 0: meta planned nothing, the kernel wrote on
    ([3, -1], "negative count"),
], ids=["sum-wraps", "negative"])
def test_repeat_counts_are_summed_without_wrapping_and_refused_before_they_run(counts, message):
    """The red team's judge_ri_wrap: repeat_interleave by counts whose int64 sum wraps to 0. The plan said an empty
    result and the CPU kernel wrote 2**62 indices past it: the process died of signal 11."""
    forged = graph([["input", 0], call("aten.repeat_interleave.Tensor", n(0)), ["output", [n(1)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.tensor(counts, dtype=torch.int64)], [torch.zeros(1)]))
    assert_refused_within_budget(outcome, "GraphRefused", message)


def test_honest_repeat_counts_still_run():
    forged = graph([["input", 0], call("aten.repeat_interleave.Tensor", n(0)), ["output", [n(1)]]])
    (result,), _ = run.run(forged, [torch.tensor([2, 0, 1])], [torch.zeros(1)])
    assert result.tolist() == [0, 0, 2]


def test_an_index_by_a_boolean_mask_runs_with_fewer_results_than_its_bound():
    """Honest `scores[..., future]` (the red team's honest_bool_index): planned at the most a mask can select (all
    of it), the real result is as long as the mask's True values; that is within its bound, never a forged graph."""
    honest = graph([["input", 0], ["input", 1], call("aten.index.Tensor", n(0), [n(1)]), ["output", [n(2)]]],
                   inputs=2)
    mask = torch.ones(3, 3, dtype=torch.bool).triu(diagonal=1)
    (result,), _ = run.run(honest, [torch.arange(9.0).view(3, 3), mask], [torch.zeros(1)])
    assert result.tolist() == [1.0, 2.0, 5.0]


def _traced_with_a_valueless_constant(shape) -> dict:
    text = json.dumps({"format": 1, "inputs": 3, "nodes": [
        ["input", 0], ["input", 1], ["input", 2], ["constant", 0, {"shape": shape, "dtype": "float32", "device": "meta"}],
        call("aten.add.Tensor", n(0), n(3)), ["output", [n(4), n(4)]]]}).encode()
    return {"graph": torch.frombuffer(bytearray(text), dtype=torch.uint8), "constants": [torch.zeros(0)],
            "structure": {"kind": "tuple", "length": 2}, "outputs": [{"kind": "tensor"}, {"kind": "tensor"}]}


def test_a_valueless_constant_of_any_shape_is_refused_before_zeros_are_made():
    """A constant made on the stand-in has no values; the parent stood it in as zeros of the shape the graph
    says, unbounded: 2 Gi elements (8 GiB) scored 19.5. Now its shape is held to the bound first."""
    traced = _traced_with_a_valueless_constant([1 << 20, 1 << 11])
    inputs = [torch.zeros(2, 4, 8) for _ in range(3)]

    def route():
        findings = answers.Findings()
        _, _, error = answers.evaluate(traced, inputs, findings, device="meta")
        raise GraphRefused(f"{error['type']}: {error['message']}")

    outcome = in_a_child(route)
    assert_refused_within_budget(outcome, "GraphRefused", "GraphRefused: a tensor without values")


def test_module_state_without_values_is_refused_before_zeros_are_made():
    state = {"names": ["mask"], "parameters": 0, "values": [torch.zeros(0)],
             "meta": [{"shape": [1 << 20, 1 << 11], "dtype": "float32"}]}
    fields = {"calls": [], "device": "meta", "grad": False, "count_ops": False, "weights": None}

    def route():
        findings = answers.Findings()
        answer = answers.mha({"state": state, "calls": []}, fields, findings)
        raise GraphRefused(f"{answer.get('error')} {findings.refused}")

    outcome = in_a_child(route)
    assert_refused_within_budget(outcome, "GraphRefused", "a tensor without values")


def test_constants_without_values_that_are_honest_stand_as_zeros():
    traced = _traced_with_a_valueless_constant([2, 4, 8])
    outputs, devices, error = answers.evaluate(traced, [torch.ones(2, 4, 8)] * 3, answers.Findings(), device="meta")
    assert error is None and torch.equal(outputs[0], torch.ones(2, 4, 8)) and devices[0] == "meta"


def test_a_complex_product_over_the_graphs_cost_is_refused_before_it_runs():
    """A complex128 (3072 x 3072) @ (3072 x 3072): every tensor within the element bound, 3 * 10**10 multiply-adds
    of the most costly dtype (seconds of CPU). It is refused as too costly before the product runs."""
    forged = graph([["input", 0], call("aten.zeros.default", [3072, 3072], dtype={"dtype": "complex128"}),
                    call("aten.mm.default", n(1), n(1)), ["output", [n(2)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(1)], [torch.zeros(1)]))
    assert outcome.get("raised") == "GraphTooCostly" and outcome["mistake"] == "submission-too-costly", outcome
    assert outcome["cpu"] < 1.0 and outcome["grown"] < 256 << 20, outcome  # the zeros (144 MiB), not the product


def test_a_graph_whose_results_together_pass_its_memory_is_refused_before_the_node_that_would_cross_it(monkeypatch):
    """Every result is kept until the run ends: each within the element bound, together over the graph's memory."""
    monkeypatch.setattr(run, "MAX_GRAPH_BYTES", 1 << 20)
    ran, call_for_real = [], run._call
    monkeypatch.setattr(run, "_call", lambda target, *rest: ran.append(target) or call_for_real(target, *rest))
    half = [call("aten.zeros.default", [1 << 17]) for _ in range(3)]  # 512 KiB of float32 each
    with pytest.raises(run.GraphTooCostly, match="would allocate over 1 MiB"):
        run.run(graph([["input", 0], *half, ["output", [n(3)]]]), [torch.zeros(1)], [torch.zeros(1)])
    assert len(ran) == 2, ran


def test_the_graphs_of_one_hand_in_share_its_budget_of_operations():
    """Each graph within its own cost, the hand-in's graphs together over its budget: the run that crosses it is
    stopped before its next node, as too costly."""
    product = graph([["input", 0], call("aten.mm.default", n(0), n(0)), ["output", [n(1)]]])
    square = torch.zeros(64, 64)
    with parent_budget.charged(parent_budget.ParentBudget(operations=10 * 64 ** 3)):
        for _ in range(8):
            run.run(product, [square], [torch.zeros(1)])
        with pytest.raises(parent_budget.OverBudget, match="multiply-adds"):
            for _ in range(8):
                run.run(product, [square], [torch.zeros(1)])


def test_the_documented_budget_of_operations_per_hand_in_is_four_times_ten_to_the_eleven():
    assert parent_budget.ParentBudget().operations == 4e11


def test_an_operator_that_writes_into_an_argument_other_than_its_own_is_refused():
    """`out=` resizes the tensor it is given, which the meta run never planned: refused whatever the operator."""
    forged = graph([["input", 0], call("aten.add.out", n(0), n(0), out=n(0)), ["output", [n(1)]]])
    with pytest.raises(GraphRefused, match="writes into an argument"):
        run.run(forged, [torch.zeros(3)], [torch.zeros(1)])


def test_an_operator_without_a_meta_kernel_is_refused_as_unbounded(monkeypatch):
    class NoMetaKernel:
        tags = ()

        def __call__(self, *args, **kwargs):
            raise NotImplementedError("no meta kernel")

    monkeypatch.setattr(run, "_operator", lambda target: NoMetaKernel())
    with pytest.raises(GraphRefused, match="cannot be bounded"):
        run.run(graph([["input", 0], call("aten.roll.default", n(0), [1]), ["output", [n(1)]]]), [torch.zeros(3)],
                [torch.zeros(1)])


def test_an_error_the_operator_raises_is_its_own_not_its_meta_kernels():
    """The diagnosis reads the CPU's words ("cannot be multiplied"): a meta run that refuses the arguments lets
    the operator raise for real, within the bounds its arguments give."""
    mismatched = graph([["input", 0], call("aten.view.default", n(0), [2, 3]), call("aten.mm.default", n(1), n(1)),
                        ["output", [n(2)]]])
    with pytest.raises(run.GraphFailed, match="cannot be multiplied"):
        run.run(mismatched, [torch.zeros(6)], [torch.zeros(1)])


def test_a_hand_in_over_its_budget_inside_a_check_is_too_costly_not_an_internal_error(monkeypatch):
    """The budget is spent where a check runs a graph; the grading ends there as `submission-too-costly` with no
    point, instead of the check being called a grader bug and the others going on."""
    class NoWorker:
        tampered, failures, missing_isolation = set(), [], None

        def __init__(self, *args):
            pass

        def ensure_loaded(self):
            pass

        def close(self):
            pass

    def over_budget(ctx):
        raise parent_budget.OverBudget("超过", "over")

    monkeypatch.setattr(grading, "StudentCode", NoWorker)
    checks = [Check("sdpa.costly", "sdpa", 1.0, "hidden", "贵", "costly", over_budget),
              Check("sdpa.after", "sdpa", 1.0, "hidden", "后", "after", lambda ctx: Outcome(True))]
    report = grading.grade(load_submission(ROOT / "solutions" / "attention" / "attention.py"), checks=checks)
    assert report["score"] == 0 and report["mistakes"] == ["submission-too-costly"], report
    assert "Internal grader error" not in json.dumps(report, ensure_ascii=False), report


@pytest.mark.parametrize("dtype, shape, target, extra", [
    ("complex64", [4096, 4096], "aten.pow.Tensor_Scalar", [2.5]),  # ~1250 float32 adds per element (benchmark)
    ("float32", [8192, 4096], "aten.sigmoid.default", []),  # a series per element, not one pass
])
def test_a_chain_of_elementwise_series_within_the_old_flat_estimate_is_refused_before_it_runs(dtype, shape, target,
                                                                                               extra):
    """Three passes of an operator that evaluates a series per element over 16 or 32 million elements: at one flat
    elementwise weight per element (the estimate before issue 41's route 9) the chain costs under a tenth of a
    graph's 4 * 10**10 multiply-adds. Weighted by its class, the complex chain is refused before its first pass and
    the float32 one before its third: no pass that would cross the bound runs."""
    forged = graph([["input", 0], call("aten.zeros.default", shape, dtype={"dtype": dtype}),
                    call(target, n(1), *extra), call(target, n(2), *extra), call(target, n(3), *extra),
                    ["output", [n(4)]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(1)], [torch.zeros(1)]))
    assert outcome.get("raised") == "GraphTooCostly" and outcome["mistake"] == "submission-too-costly", outcome
    assert outcome["cpu"] < 1.0 and outcome["grown"] < 512 << 20, outcome  # the zeros and at most two passes


@pytest.mark.parametrize("nodes", [
    # a window of 4 Mi elements slid over 16 Mi: about 5 * 10**13 comparisons (red team 3's route 8)
    [call("aten.zeros.default", [1, 1, 16 << 20]), call("aten.max_pool1d.default", n(1), [4 << 20], [1])],
    # one kernel size for both dims: a 1024 x 1024 window at each of about a million places
    [call("aten.zeros.default", [1, 1, 2048, 2048]), call("aten.avg_pool2d.default", n(1), [1024], [1])],
    # 512 in-channels x a kernel of 64 per output element, 8 million outputs
    [call("aten.zeros.default", [1, 512, 16384]), call("aten.zeros.default", [512, 512, 64]),
     call("aten.conv1d.default", n(1), n(2))],
    # an inverse of a 4096 x 4096 matrix: n**3, where it holds n**2 elements
    [call("aten.zeros.default", [4096, 4096]), call("aten.linalg_inv.default", n(1))],
    # 4096 x 4096 distances over 4096 features
    [call("aten.zeros.default", [1, 4096, 4096]), call("aten._cdist_forward.default", n(1), n(1), 2.0, None)],
], ids=["max_pool1d", "avg_pool2d", "conv1d", "linalg_inv", "cdist"])
def test_an_operator_whose_work_outgrows_its_elements_is_refused_before_it_runs(nodes):
    """Each node reads and writes at most 64 million elements, a hundredth of a graph's 4 * 10**10 multiply-adds at
    one pass each, and does a thousand times more work than that (a window, a kernel, a cubic decomposition, a
    product over features). Priced by its work, it is refused as too costly before it runs."""
    forged = graph([["input", 0], *nodes, ["output", [n(len(nodes))]]])
    outcome = in_a_child(lambda: run.run(forged, [torch.zeros(1)], [torch.zeros(1)]))
    assert outcome.get("raised") == "GraphTooCostly" and outcome["mistake"] == "submission-too-costly", outcome
    assert "multiply-adds" in outcome["message"], outcome
    assert outcome["cpu"] < 1.0 and outcome["grown"] < 512 << 20, outcome  # the zeros, never the operator
