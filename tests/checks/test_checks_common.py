"""The shared check logic on made-up probe results: no sandbox, no student code, milliseconds."""
import torch

from grader.checks import Context, Outcome, failed, passed
from grader.checks.common import counted_loops, device_sweep, loop_stages, needs_correct_values
from grader.checks.sdpa.behaviour import leading_dims_diagnosis
from grader.checks.sdpa.runtime import loop_shapes

import pytest

pytestmark = pytest.mark.unit


def context(cuda: bool = False, **outcomes) -> Context:
    return Context(student=None, static={}, cuda=cuda, outcomes=outcomes)


def numbers_off() -> Outcome:
    outcome = failed("数值不对", "numbers off", ["wrong-scale"])
    outcome.cause = "values"
    return outcome


def test_a_values_failure_downstream_cascades_only_when_the_values_check_failed():
    assert needs_correct_values(context(**{"sdpa.values": passed()}), "sdpa", numbers_off()).mistakes == ["wrong-scale"]
    cascaded = needs_correct_values(context(**{"sdpa.values": numbers_off()}), "sdpa", numbers_off())
    assert (cascaded.passed, cascaded.mistakes) == (False, [])
    assert cascaded.en == "Not checked: needs correct values (see sdpa.values)." and cascaded.zh.startswith("未检查")


def test_a_checks_own_finding_and_a_different_error_never_cascade():
    ctx = context(**{"mha.values": numbers_off()})
    own = failed("没有梯度", "no gradient", ["broken-grad"])
    own.cause = "values"
    assert needs_correct_values(ctx, "mha", own, own=("broken-grad",)).mistakes == ["broken-grad"]
    crash = failed("报错", "crash", ["inplace-autograd"])
    crash.cause = "error:RuntimeError:inplace-autograd"
    assert needs_correct_values(ctx, "mha", crash).mistakes == ["inplace-autograd"]


def test_the_device_sweep_judges_devices_only():
    cpu_output = torch.ones(2, 2)
    left_behind = device_sweep(context(), [("case", None)], lambda case, where: (None, {"device": "cpu"}),
                               lambda case, error: "mask-device", lambda case, value: None)
    assert left_behind.mistakes == ["hardcoded-device"]
    on_the_cpu = {"device": "cpu"}  # what the CPU of a machine with a GPU answers
    meta_only = device_sweep(context(), [("case", None)], lambda case, where: (
        ({"type": "RuntimeError", "message": "shape mismatch"}, {}) if where == "meta" else
        (None, on_the_cpu if where == "cpu-beside-a-gpu" else {"device": where})),
        lambda case, error: "mask-device", lambda case, value: None)
    assert meta_only.passed and "inconclusive on meta" in meta_only.en
    shape_mismatch = ({"type": "RuntimeError", "message": "shape mismatch"}, {})
    nowhere = device_sweep(context(), [("case", None)], lambda case, where: (
        (None, on_the_cpu) if where in ("cpu-beside-a-gpu", "cpu") else shape_mismatch),
        lambda case, error: "mask-device", lambda case, value: None)
    assert not nowhere.passed and nowhere.mistakes == ["device-not-judged"], nowhere
    assert "could not be judged on the GPU stand-ins: review by hand, or grade on a GPU" in nowhere.en
    # the same error on the plain CPU at these sizes: no device question, a cascade without an id (the value checks
    # name the code's mistake); a CPU error that says the build has no GPU stays one
    everywhere = device_sweep(context(), [("case", None)], lambda case, where: shape_mismatch,
                              lambda case, error: "mask-device", lambda case, value: None)
    assert not everywhere.passed and everywhere.mistakes == [] and everywhere.cause == "cascade", everywhere
    assert "fails on the CPU too (RuntimeError" in everywhere.en
    no_cuda = ({"type": "RuntimeError", "message": "Torch not compiled with CUDA enabled"}, {})
    asks_cuda = device_sweep(context(), [("case", None)], lambda case, where: (
        no_cuda if where == "cpu" else (None, on_the_cpu) if where == "cpu-beside-a-gpu" else shape_mismatch),
        lambda case, error: "mask-device", lambda case, value: None)
    assert asks_cuda.mistakes == ["device-not-judged"], asks_cuda
    differs_on_gpu = device_sweep(context(cuda=True), [("case", None)],
                                  lambda case, where: (None, {"device": where, "value": cpu_output + 1}),
                                  lambda case, error: "mask-device",
                                  lambda case, value: None if torch.equal(value, cpu_output) else failed("差", "differs"))
    assert not differs_on_gpu.passed and differs_on_gpu.en == "differs"


def test_the_loop_probe_grows_every_dim_the_accepted_rank_has_a_little_then_past_any_padding_at_drawn_sizes():
    drawn = set()
    for leading in range(4):
        for _ in range(8):
            (base,), small, grown = loop_shapes(context(), leading)
            drawn.add(base)
            (batch, T) = base
            assert all(2 <= size <= 4 for size in batch) and 5 <= T <= 7  # no size-1 dim, never T heads
            for stage, low, high in ((small, 10, 19), (grown, 128, 143)):
                assert len(stage) == leading + 1  # each leading dim, then T, grown alone
                for place, (sizes, length) in enumerate(stage):
                    grown_sizes = (*sizes, length)
                    assert [i for i, size in enumerate(grown_sizes) if size != (*batch, T)[i]] == [place]
                    assert low <= grown_sizes[place] <= high
    assert len(drawn) > 8  # other sizes in other gradings: none written in the grader to match


def padded_loop(sizes: dict, pad: int) -> int:
    """The ops of code that loops over each dimension (a head, a sample, a position at a time), run to
    max(size, pad) steps on empty slices past the last: 10 ops outside the loops, 3 a step."""
    return 10 + sum(3 * max(size, pad) for size in sizes.values())


@pytest.mark.parametrize("dim", ["B", "H", "T"])
@pytest.mark.parametrize("pad", [1, 8, 64, 125])
def test_a_loop_padded_to_any_length_is_caught_whichever_dim_it_runs_over(dim, pad):
    stages = loop_stages(context(), "a loop", {"B": range(2, 5), "H": range(2, 5), "T": range(5, 8)})
    looped = counted_loops(stages, lambda sizes: padded_loop({dim: sizes[dim]}, pad), str)
    assert looped.mistakes == ["python-loop"], (dim, pad, looped.en)


def test_counts_that_grow_with_no_dimension_pass_and_a_loop_seen_small_is_never_run_large():
    stages = loop_stages(context(), "a loop", {"B": range(2, 5), "H": range(2, 5), "T": range(5, 8)})
    assert counted_loops(stages, lambda sizes: 31, str).passed
    asked = []
    plain = counted_loops(stages, lambda sizes: asked.append(sizes) or padded_loop({"H": sizes["H"]}, 1), str)
    assert plain.mistakes == ["python-loop"] and max(sizes["H"] for sizes in asked) <= 4 + 12


def test_hardcoded_dims_needs_a_whole_rank_failing_and_another_passing():
    crash = failed("报错", "crash")
    rank_bug = [(((), 6, 8, 8), crash), (((), 1, 4, 6), crash), (((2, 3), 5, 8, 8), None)]
    named = leading_dims_diagnosis(context(), rank_bug, ((), 6, 8, 8), crash)
    assert named.mistakes == ["hardcoded-dims"] and "wrong with 0" in named.en
    one_token_bug = [(((), 6, 8, 8), None), (((), 1, 4, 6), crash), (((2, 3), 5, 8, 8), None)]
    assert leading_dims_diagnosis(context(), one_token_bug, ((), 1, 4, 6), crash).mistakes == []
