"""Is what torch.cuda is asked inside a call the worker made into student code the student's asking, whatever frame
carried it there?

The standard library relays a call (`contextlib.ExitStack().callback(torch.cuda.get_device_properties, 0)`) and C
callables carry one from torch's own `Module._call_impl` (a forward pre-hook made of `functools.partial`): the
immediate caller is then contextlib's or torch's, never the submission's. A CPU-only build also refuses some GPU
requests in C, with no Python function to swap (`torch.Generator(device="cuda")`). Inside the worker's call boundary
(grader/sandbox/call_boundary.py) each is refused and counted on a stand-in (grader/sandbox/stand_in_cuda.py), so
the device check judges nothing there rather than a pass. Beside a GPU (the CPU of a machine with one) the immediate
caller still decides: torch's own move to a fixed "cuda" meets this build, which names the fixed device. Each call
below is undone when it ends, an error or not: nothing is left swapped for the next test in the process.
"""
import sys

import pytest
import torch

from grader.sandbox import call_boundary, probes, stand_in_cuda
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.unit

TELLS = """import contextlib
import functools
import torch


def relayed(Q):
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(torch.cuda.get_device_properties, 0)
    except Exception:
        return 'stand-in'
    return 'gpu'


def memory_relayed(Q):
    try:
        return functools.singledispatch(torch.cuda.memory_allocated)(0) > 0
    except RuntimeError:
        return 'stand-in'


def generator_on_the_gpu(Q):
    try:
        torch.Generator(device='cuda')
    except RuntimeError:
        return 'stand-in'
    return 'gpu'


def generator_relayed(Q):
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(torch.Generator, device='cuda')
    except RuntimeError:
        return 'stand-in'
    return 'gpu'


class Hooked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_forward_pre_hook(functools.partial(torch.cuda.get_device_properties, 0))

    def forward(self, Q):
        return Q * 2


def hooked(Q):
    try:
        Hooked()(Q)
    except Exception:
        return 'stand-in'
    return 'gpu'
"""
LINES = TELLS.splitlines()
CARRIED = {"relayed by contextlib": ("relayed", 8), "memory relayed by functools": ("memory_relayed", 17),
           "a generator on cuda": ("generator_on_the_gpu", 24), "a generator relayed by contextlib": ("generator_relayed", 32),
           "a pre-hook of C callables": ("hooked", 50)}
"""Each function and the student's line counted for it: a relayed call is counted where the relay ran (the `with`
that closes the ExitStack), a pre-hook's where the module was called. The memory asked through `singledispatch`
raises nothing on this build (0 bytes): only the call boundary counts it."""


@pytest.fixture(scope="module")
def namespace():
    loaded, errors = load_student(TELLS, None)
    assert errors == []
    return loaded


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
@pytest.mark.parametrize("function, line", CARRIED.values(), ids=CARRIED.keys())
def test_a_gpu_request_carried_for_the_student_is_refused_and_counted_on_a_stand_in(namespace, function, line,
                                                                                        stand_in):
    Q = probes._place(torch.empty(2, 3), stand_in)
    with call_boundary.students_call(), probes._device_guard(stand_in, LINES) as cuda:
        namespace[function](Q)
    assert cuda.asked is not None and cuda.asked["line"] == line, cuda.asked


def test_torch_cuda_asked_by_the_graders_own_code_outside_a_students_call_runs_as_always():
    """Between probes (no call into student code) torch's and the grader's calls meet the CPU build."""
    with probes._device_guard("meta", LINES) as cuda:
        assert torch.cuda.memory_allocated() == 0 and torch.backends.cudnn.version() is None
    assert cuda.asked is None


def test_a_move_to_cuda_started_by_torch_beside_a_gpu_meets_this_build_and_is_not_counted():
    """What names a fixed "cuda" on the CPU of a machine with a GPU (hardcoded-device): this build's own error."""
    with call_boundary.students_call(), probes._device_guard("cpu-beside-a-gpu", LINES) as cuda:
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            torch.cuda._lazy_init()
    assert cuda.asked is None


def test_everything_is_undone_when_a_students_call_ends_in_an_error(namespace):
    swap = stand_in_cuda.swap()
    codes = {key: function.__code__ for key, function in swap.functions.items()}
    tracing = sys.gettrace()
    with pytest.raises(ZeroDivisionError):
        with call_boundary.students_call(), probes._device_guard("meta", LINES):
            1 / 0
    assert call_boundary.on_the_students_behalf() is False
    assert sys.gettrace() is tracing
    assert {key: function.__code__ for key, function in swap.functions.items()} == codes
    assert torch.backends.cudnn.is_available() is False and torch.cuda.is_available() is False
