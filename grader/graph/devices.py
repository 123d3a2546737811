"""What a GPU refuses, said on the stand-ins for one: used by the worker while it traces on a stand-in, and by
the parent when it runs that graph itself (`grader/graph/run.py`)."""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

STAND_INS = {"meta": "meta", "fake-cuda": "cuda"}
"""Each stand-in for a GPU a probe may ask for, and the device its tensors have in the graph: the meta device,
and a FakeTensor on "cuda" (`grader/sandbox/fake_gpu.py`). Their graphs run here on the CPU with devices followed."""

CPU_BESIDE_A_GPU = "cpu-beside-a-gpu"
"""A module and inputs on the CPU of a machine that has a GPU (torch.cuda answers as one: grader/sandbox/stand_in_cuda.py):
a mask sent to a fixed "cuda" (`"cuda" if torch.cuda.is_available() else "cpu"`) no longer follows the module there.
Its graph is a CPU graph; on a CPU-only build the move to "cuda" raises as on no GPU, which names the fixed device."""

CPU_OPERAND_SHAPES = "shapes of the cpu operands:"
"""Said in the guard's message: which tensor strayed tells a CPU mask from a CPU constant (grader/checks/diagnosis.py)."""


class DeviceMixGuard(TorchDispatchMode):
    """On a stand-in for a GPU, what a GPU refuses: an op that mixes a stand-in tensor with a CPU tensor of one
    or more dims. Meta kernels let some of these through (an in-place `scores += bias` with a CPU bias); a GPU
    raises on every one. CPU scalars (0-dim) mix legitimately, and copies and indexing take operands on another
    device by design."""

    ALLOWED = {"copy_", "_to_copy", "to", "_copy_from", "copy", "index", "index_put_", "index_put",
               "_index_put_impl_", "lift_fresh", "detach", "clone"}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Without torch's dynamo-disabling shim at every operator, as the tracer's Recorder: nothing here compiles."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func.overloadpacket.__name__) not in self.ALLOWED:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
            strays = [t for t in tensors if t.device.type == "cpu" and t.dim() > 0]
            other = next((t.device.type for t in tensors if t.device.type != "cpu"), None)
            if strays and other is not None:
                shapes = ", ".join(str(list(t.shape)) for t in strays[:4])
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, {other} and cpu! (in {func.overloadpacket.__name__}; "
                                   f"{CPU_OPERAND_SHAPES} {shapes})")
        return func(*args, **kwargs)
