"""Is what happens inside a call the grader made into student code the student's doing, whoever carried it there?

C callables carry a call with no Python frame of their own: a forward pre-hook made of `functools.partial`, `map`
and `np.fromfile` runs from torch's `Module._call_impl`, and the standard library relays a call
(`contextlib.ExitStack.callback`). No frame of the submission is then on the stack, or not the immediate caller:
the audit hook and the stand-in's torch.cuda (grader/sandbox/call_boundary.py) count it as the student's all the
same, from the probe's call until it returns, while torch's own lazy work and the grader's bookkeeping run.
"""
import pytest
import torch

from grader.sandbox import call_boundary, probes
from grader.sandbox.guard import Guard
from grader.sandbox.worker import load_student
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

AUDIT = SUBMISSIONS / "audit"


@pytest.mark.usefixtures("static_rules_off")  # the audit hook alone stands in the way
def test_a_file_read_carried_by_c_callables_from_torch_gains_nothing_over_the_same_read_in_forward(graded):
    report = graded(AUDIT / "file_read_by_a_forward_pre_hook.py")
    twin = graded(AUDIT / "file_read_in_forward.py")
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])
    assert "introspection" in report["mistakes"], report["mistakes"]
    assert all(c["points"] == 0 for c in report["checks"] if c["part"] == "mha"), "the module that read the file"


HOOKED = """import functools
import torch


class Probe(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_pre_hook(functools.partial(torch.cuda.get_device_properties, 0))

    def forward(self, Q):
        return Q * 2
"""


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
def test_torch_cuda_reached_through_a_hook_of_c_callables_is_refused_and_counted(stand_in):
    """torch's own `_call_impl` calls the hook: inside the probe's call it is asked on the student's behalf."""
    namespace, errors = load_student(HOOKED, Guard())
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    module = namespace["Probe"]()
    with call_boundary.students_call(), probes._device_guard(stand_in, HOOKED.splitlines()) as cuda:
        with pytest.raises(RuntimeError, match="cannot be answered"):
            module(Q)
    assert cuda.asked == {"line": 0, "text": "torch.cuda.get_device_properties", "function": ""}, cuda.asked
