"""Do the stand-ins for a GPU (the meta device, a FakeTensor on "cuda") answer as a GPU in everything student code
can read?

Code that moves a CPU mask to the input's device only when it sees that it is not on a real GPU would
earn the device point here and crash on a GPU. Each observable below is read by code loaded as a
submission is (through the worker's guard), on a tensor on the stand-in, inside the device probe's
modes (grader/sandbox/probes.py): each must say GPU. The FakeTensor stand-in says it with the guard off too:
code that tells the meta stand-in apart from a GPU without the guard meets the mismatch there. What stays
visible is listed in docs/isolation.md; the device point is graded from the graph the parent re-runs.
"""
import pytest
import torch

from grader.sandbox import probes
from grader.sandbox.guard import Guard
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.unit

OBSERVABLES = {
    "cuda.is_available": "torch.cuda.is_available()",
    "cuda.is_available, imported by name": "is_available()",
    "cuda.device_count": "torch.cuda.device_count() == 1",
    "cuda.current_device": "torch.cuda.current_device() == 0",
    "cuda.get_device_name": "len(torch.cuda.get_device_name()) > 0",
    "cuda.get_device_capability": "torch.cuda.get_device_capability()[0] >= 7",
    "Tensor.type()": "Q.type() == 'torch.cuda.FloatTensor'",
    "Tensor.is_cuda": "Q.is_cuda",
    "Tensor.get_device()": "Q.get_device() == 0",
    "device.type": "Q.device.type == 'cuda'",
    "str(device)": "str(Q.device) == 'cuda:0'",
    "repr(device)": "repr(Q.device) == \"device(type='cuda', index=0)\"",
    "f-string of a device": "f'{Q.device}' == 'cuda:0'",
    "str.format field": "'{0.device}'.format(Q) == 'cuda:0'",
    "str.format of a device": "'{}'.format(Q.device) == 'cuda:0'",
    "str.format, unbound": "str.format('{0.is_cuda}', Q) == 'True'",
    "str.format_map": "'{t.device.type}'.format_map({'t': Q}) == 'cuda'",
    "repr(tensor)": "\"device='cuda:0'\" in repr(Q)",
    "str(tensor)": "\"device='cuda:0'\" in str(Q)",
    "format(tensor)": "\"device='cuda:0'\" in format(Q)",
    "__cuda_array_interface__": "Q.__cuda_array_interface__['shape'] == tuple(Q.shape)",
    "hasattr __cuda_array_interface__": "hasattr(Q, '__cuda_array_interface__')",
}


STAND_INS = {"meta, guarded": ("meta", True), "fake-cuda, guarded": ("fake-cuda", True),
             "fake-cuda, guard off": ("fake-cuda", False)}


@pytest.mark.parametrize("stand_in, guarded", STAND_INS.values(), ids=STAND_INS.keys())
@pytest.mark.parametrize("expression", OBSERVABLES.values(), ids=OBSERVABLES.keys())
def test_the_stand_in_answers_as_a_gpu(expression, stand_in, guarded):
    source = f"import torch\nfrom torch.cuda import is_available\n\n\ndef says_gpu(Q):\n    return bool({expression})\n"
    namespace, errors = load_student(source, Guard() if guarded else None)
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    before = torch.cuda.is_available(), torch.cuda.device_count()
    with probes._device_guard(stand_in):
        assert namespace["says_gpu"](Q) is True
    assert (torch.cuda.is_available(), torch.cuda.device_count()) == before, "torch.cuda answers as before afterwards"
