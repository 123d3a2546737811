"""What a GPU refuses, said on the meta device that stands in for one: used by the worker while it
traces on the stand-in, and by the parent when it runs that graph itself (`grader/graph/run.py`)."""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

CPU_OPERAND_SHAPES = "shapes of the cpu operands:"
"""Said in the guard's message: which tensor strayed tells a CPU mask from a CPU constant (grader/checks/diagnosis.py)."""


class DeviceMixGuard(TorchDispatchMode):
    """On the meta stand-in for a GPU, what a GPU refuses: an op that mixes a meta tensor with a CPU
    tensor of one or more dims. Meta kernels let some of these through (an in-place `scores += bias`
    with a CPU bias); a GPU raises on every one. CPU scalars (0-dim) mix legitimately, and copies and
    indexing take operands on another device by design."""

    ALLOWED = {"copy_", "_to_copy", "to", "_copy_from", "copy", "index", "index_put_", "index_put",
               "_index_put_impl_", "lift_fresh", "detach", "clone"}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func.overloadpacket.__name__) not in self.ALLOWED:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
            strays = [t for t in tensors if t.device.type == "cpu" and t.dim() > 0]
            if strays and any(t.device.type == "meta" for t in tensors):
                shapes = ", ".join(str(list(t.shape)) for t in strays[:4])
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, meta and cpu! (in {func.overloadpacket.__name__}; "
                                   f"{CPU_OPERAND_SHAPES} {shapes})")
        return func(*args, **kwargs)
