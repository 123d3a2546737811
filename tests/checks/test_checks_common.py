"""The shared check logic on made-up probe results: no sandbox, no student code, milliseconds."""
import torch

from grader.checks import Context, Outcome, failed, passed
from grader.checks.common import device_sweep, needs_correct_values
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
    nowhere = device_sweep(context(), [("case", None)],
                           lambda case, where: (None, on_the_cpu) if where == "cpu-beside-a-gpu" else shape_mismatch,
                           lambda case, error: "mask-device", lambda case, value: None)
    assert not nowhere.passed and nowhere.mistakes == ["device-not-judged"], nowhere
    assert "could not be judged on the GPU stand-ins: review by hand, or grade on a GPU" in nowhere.en
    differs_on_gpu = device_sweep(context(cuda=True), [("case", None)],
                                  lambda case, where: (None, {"device": where, "value": cpu_output + 1}),
                                  lambda case, error: "mask-device",
                                  lambda case, value: None if torch.equal(value, cpu_output) else failed("差", "differs"))
    assert not differs_on_gpu.passed and differs_on_gpu.en == "differs"


def test_the_loop_probe_grows_every_dim_the_accepted_rank_has():
    assert loop_shapes(0) == [((), 4), ((), 16), ((), 128)]
    assert loop_shapes(1) == [((2,), 4), ((8,), 4), ((2,), 16), ((2,), 128)]
    assert loop_shapes(2) == [((1, 2), 4), ((1, 8), 4), ((1, 2), 16), ((1, 2), 128), ((4, 2), 4)]
    assert loop_shapes(3)[0] == ((1, 1, 2), 4) and ((4, 1, 2), 4) in loop_shapes(3)


def test_more_ops_than_the_cap_at_the_base_shape_is_a_loop_and_the_cap_itself_is_not():
    """A loop run to a fixed length on empty slices is flat across shapes: only its size at the base gives it away."""
    from grader.checks.common import loop_verdict
    from grader.checks.sdpa.runtime import LOOP_CAP
    assert LOOP_CAP == 250  # docs: honest styles dispatch about 31; 2 ops a step under 250 cover at most 125 < 128
    flat = {"2×4": 640, "2×16": 640, "2×128": 640}
    assert loop_verdict(flat, "2×4", 250).mistakes == ["python-loop"] and "640" in loop_verdict(flat, "2×4", 250).en
    assert loop_verdict({"2×4": 250, "2×128": 250}, "2×4", 250).passed
    assert loop_verdict({"2×4": 31, "2×128": 31}, "2×4", 250).passed


def test_hardcoded_dims_needs_a_whole_rank_failing_and_another_passing():
    crash = failed("报错", "crash")
    rank_bug = [(((), 6, 8, 8), crash), (((), 1, 4, 6), crash), (((2, 3), 5, 8, 8), None)]
    named = leading_dims_diagnosis(context(), rank_bug, ((), 6, 8, 8), crash)
    assert named.mistakes == ["hardcoded-dims"] and "wrong with 0" in named.en
    one_token_bug = [(((), 6, 8, 8), None), (((), 1, 4, 6), crash), (((2, 3), 5, 8, 8), None)]
    assert leading_dims_diagnosis(context(), one_token_bug, ((), 1, 4, 6), crash).mistakes == []
