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
    "cuda.is_initialized": "torch.cuda.is_initialized()",
    "cuda.synchronize": "torch.cuda.synchronize() is None",
    "cuda.empty_cache": "torch.cuda.empty_cache() is None",
    "cuda.manual_seed": "torch.cuda.manual_seed(0) is None",
    "accelerator.is_available": "torch.accelerator.is_available()",
    "accelerator.current_accelerator": "torch.accelerator.current_accelerator().type == 'cuda'",
    "accelerator.synchronize": "torch.accelerator.synchronize() is None",
    "backends.cuda.is_built": "torch.backends.cuda.is_built()",
    "backends.cudnn.is_available": "torch.backends.cudnn.is_available()",
    "backends.cudnn.version": "torch.backends.cudnn.version() >= 8000",
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
    with probes._device_guard(stand_in, source.splitlines()):
        assert namespace["says_gpu"](Q) is True
    assert (torch.cuda.is_available(), torch.cuda.device_count()) == before, "torch.cuda answers as before afterwards"


REFUSED_CUDA = {
    "synchronize on a stream": "torch.cuda.current_stream().synchronize()",
    "memory_allocated": "torch.cuda.memory_allocated()",
    "max_memory_allocated": "torch.cuda.max_memory_allocated()",
    "memory_reserved": "torch.cuda.memory_reserved()",
    "mem_get_info": "torch.cuda.mem_get_info()",
    "memory_stats": "torch.cuda.memory_stats()",
    "get_device_properties": "torch.cuda.get_device_properties(0).total_memory",
    "get_arch_list": "torch.cuda.get_arch_list()",
    "is_bf16_supported": "torch.cuda.is_bf16_supported()",
    "get_rng_state": "torch.cuda.get_rng_state()",
    "Stream": "torch.cuda.Stream()",
    "Event": "torch.cuda.Event(enable_timing=True)",
    "device as a context": "torch.cuda.device(0)",
    "set_device": "torch.cuda.set_device(0)",
    "a submodule's function": "torch.cuda.memory.memory_allocated()",
    "accelerator memory": "torch.accelerator.memory_allocated()",
    "accelerator stream": "torch.accelerator.current_stream()",
    "cudnn on a tensor": "torch.backends.cudnn.is_acceptable(Q)",
    "imported by name before": "memory_allocated()",
}
"""What a CPU-only build answers otherwise than a GPU, or refuses where a GPU answers: each, called from student code on a
stand-in, raises and is counted, however the code caught the error."""


@pytest.mark.parametrize("stand_in, guarded", STAND_INS.values(), ids=STAND_INS.keys())
@pytest.mark.parametrize("call", REFUSED_CUDA.values(), ids=REFUSED_CUDA.keys())
def test_every_other_cuda_call_from_student_code_on_a_stand_in_is_refused_and_counted(call, stand_in, guarded):
    source = ("import torch\nfrom torch.cuda import memory_allocated\n\n\ndef tells(Q):\n    try:\n"
              f"        {call}\n    except Exception:\n        return 'stand-in'\n    return 'gpu'\n")
    namespace, errors = load_student(source, Guard() if guarded else None)
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    with probes._device_guard(stand_in, source.splitlines()) as cuda:
        namespace["tells"](Q)
    assert cuda.asked is not None and cuda.asked["line"] == 7 and call in cuda.asked["text"], cuda.asked
    assert torch.cuda.memory_allocated() == 0 and torch.cuda.is_initialized() is False, "torch.cuda as before afterwards"


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
def test_mixed_precision_from_torch_cuda_runs_on_a_stand_in_as_always(stand_in):
    """`torch.cuda.amp.autocast(enabled=False)` is an honest idiom (Hugging Face's upcast path): never refused."""
    source = ("import torch\nfrom torch.cuda.amp import autocast\n\n\ndef upcast(Q):\n"
              "    with autocast(enabled=False):\n        return Q.float() @ Q.float().transpose(-2, -1)\n")
    namespace, errors = load_student(source, Guard())
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    with probes._device_guard(stand_in, source.splitlines()) as cuda:
        assert tuple(namespace["upcast"](Q).shape) == (2, 2)
    assert cuda.asked is None


def test_torch_cuda_called_by_torch_itself_on_a_stand_in_runs_as_always():
    """Only the student's own calls are answered or refused: torch's code calling torch.cuda meets the CPU build."""
    Q = probes._place(torch.empty(2, 3), "meta")
    with probes._device_guard("meta", []) as cuda:
        assert torch.cuda.memory_allocated() == 0 and torch.cuda.is_initialized() is False
    assert cuda.asked is None


DEVICE_IDENTITY = {
    "two reads, two objects": "Q.device is not Q.device",
    "a read held, then another": "(lambda held: held is not Q.device)(Q.device)",
    "a read dropped, its address reused": "id(Q.device) == id(Q.device)",
}
"""What a real tensor's `.device` is as an object: a fresh one per read (a shared one told both stand-ins from a
GPU), freed when the code drops it, so the next read lands at its address."""


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
@pytest.mark.parametrize("expression", DEVICE_IDENTITY.values(), ids=DEVICE_IDENTITY.keys())
def test_each_read_of_a_stand_ins_device_is_a_fresh_object_as_on_a_gpu(expression, stand_in):
    source = f"import torch\n\n\ndef says_gpu(Q):\n    return bool({expression})\n"
    namespace, errors = load_student(source, Guard())
    assert errors == []
    assert namespace["says_gpu"](torch.empty(2, 3)) is True, "a real tensor says so"
    Q = probes._place(torch.empty(2, 3), stand_in)
    with probes._device_guard(stand_in, source.splitlines()):
        assert namespace["says_gpu"](Q) is True


def test_a_device_read_afresh_still_follows_the_meta_stand_in_when_passed_back():
    """Every object a read handed out, held or dropped and handed out again, means meta to torch."""
    source = ("import torch\n\n\ndef masks(Q):\n    held = [Q.device for _ in range(3)]\n"
              "    again = [Q.device for _ in range(3)]\n"
              "    return [torch.ones(2, 2, device=d) for d in held + again]\n")
    namespace, errors = load_student(source, Guard())
    assert errors == []
    Q = probes._place(torch.empty(2, 3), "meta")
    with probes._device_guard("meta", source.splitlines()):
        masks = namespace["masks"](Q)
    assert [mask.device.type for mask in masks] == ["meta"] * 6


GPU_NAMED = {
    "the device's text": "torch.zeros(2, device=str(Q.device))",
    "a device made from its text": "torch.zeros(2, device=torch.device(str(Q.device)))",
    "cuda:0 written": "torch.empty(1, device=torch.device('cuda', 0))",
    "to('cuda')": "torch.ones(2).to('cuda')",
    "to(device=...)": "torch.ones(2).to(device='cuda:0')",
    ".cuda()": "torch.ones(2).cuda()",
    ".cuda(0)": "torch.ones(2).cuda(0)",
    "new_zeros": "Q.new_zeros(2, device='cuda')",
}
"""The GPU a stand-in's input reads as being on, named by the code: on a GPU grading that is where the input lives,
so each runs there; the meta stand-in runs it on meta, as the FakeTensor stand-in runs it on its fake GPU (a fixed
"cuda" is found on the CPU beside a GPU, as on a real one)."""


def made_on_the_stand_in(expression: str, stand_in: str) -> tuple[str, tuple]:
    """The device text and the shape of what `expression` makes of Q on `stand_in`, each read through the guard as
    student code reads them, beside Q's own device text (cuda:0 on either stand-in)."""
    source = (f"import torch\n\n\ndef made(Q):\n    made = {expression}\n"
              "    return str(made.device), tuple(made.shape), str(Q.device)\n")
    namespace, errors = load_student(source, Guard())
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    with probes._device_guard(stand_in, source.splitlines()):
        device, shape, own = namespace["made"](Q)
    assert device == own
    return device, shape


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
@pytest.mark.parametrize("expression", GPU_NAMED.values(), ids=GPU_NAMED.keys())
def test_the_gpu_the_input_is_on_named_by_the_code_is_the_stand_ins_own(expression, stand_in):
    made_on_the_stand_in(expression, stand_in)


CPU_SCALAR_FILLS = {
    "masked_fill": "Q.masked_fill(Q > 0, torch.tensor(float('-inf')))",
    "masked_fill, value=": "Q.masked_fill(Q > 0, value=torch.tensor(0.5))",
    "masked_fill_": "Q.clone().masked_fill_(Q > 0, torch.tensor(-1e9))",
    "torch.masked_fill": "torch.masked_fill(Q, Q > 0, torch.tensor(2.0))",
}
"""A CPU 0-dim tensor as the value: a GPU's masked_fill takes it beside a CUDA tensor (torch's own rule for CPU scalars);
the meta device's kernel alone refuses it, which read as a mask on the wrong device."""


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
@pytest.mark.parametrize("expression", CPU_SCALAR_FILLS.values(), ids=CPU_SCALAR_FILLS.keys())
def test_a_cpu_scalar_tensor_fills_a_stand_in_as_it_fills_a_gpu(expression, stand_in):
    assert made_on_the_stand_in(expression, stand_in)[1] == (2, 3)


def test_another_gpu_named_by_the_code_is_not_the_meta_stand_ins():
    source = "import torch\n\n\ndef other(Q):\n    return torch.empty(1, device='cuda:1')\n"
    namespace, errors = load_student(source, Guard())
    Q = probes._place(torch.empty(2, 3), "meta")
    with probes._device_guard("meta", source.splitlines()):
        with pytest.raises(Exception, match="CUDA|cuda"):
            namespace["other"](Q)


ARRAY_INTERFACES = {
    "attribute": "Q.__cuda_array_interface__['data'][0]",
    "hasattr": "hasattr(Q, '__cuda_array_interface__')",
    "str.format field": "('{0.__cuda_' + 'array_interface__[data][0]}').format(Q)",
    "str.format_map field": "'{t.__cuda_array_interface__}'.format_map({'t': Q})",
    "numpy's interface": "Q.__array_interface__",
    "dlpack": "Q.__dlpack__()",
    "data pointer": "Q.data_ptr()",
}
"""What says where a tensor's memory is: a stand-in has none (a data pointer of 0 told it from a GPU, where the
reads were refused), so each is refused on every tensor alike, the CPU's included."""


@pytest.mark.parametrize("device", ["cpu", "meta", "fake-cuda"])
@pytest.mark.parametrize("expression", ARRAY_INTERFACES.values(), ids=ARRAY_INTERFACES.keys())
def test_what_says_where_a_tensors_memory_is_is_refused_on_every_device_alike(expression, device):
    source = f"import torch\n\n\ndef reads(Q):\n    return {expression}\n"
    guard = Guard()
    namespace, errors = load_student(source, guard)
    assert errors == []
    Q = probes._place(torch.empty(2, 3), device)
    with probes._device_guard(device, source.splitlines()), pytest.raises(PermissionError, match="not allowed"):
        namespace["reads"](Q)
    assert guard.seen(), "the refusal is recorded for the report"


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
def test_a_tensor_made_on_the_cpu_beside_a_stand_in_reads_its_own_device_afresh(stand_in):
    """A mask made without `device=` is on the CPU (a FakeTensor of the CPU on the second stand-in): its device
    reads as the CPU, one object per read, and differs from the input's (the honest check-then-move idiom)."""
    source = ("import torch\n\n\ndef mask_device(Q):\n    future = torch.ones(2, 2, dtype=torch.bool)\n"
              "    return str(future.device), future.device is future.device, future.device != Q.device\n")
    namespace, errors = load_student(source, Guard())
    assert errors == []
    Q = probes._place(torch.empty(2, 3), stand_in)
    with probes._device_guard(stand_in, source.splitlines()):
        assert namespace["mask_device"](Q) == ("cpu", False, True)
