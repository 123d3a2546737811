"""What a GPU refuses, said on the stand-ins for one: used by the worker while it traces on a stand-in, and by
the parent when it runs that graph itself (`grader/graph/run.py`)."""
from __future__ import annotations

import functools

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
    device by design; a CPU scalar written into (`total.add_(loss)`) does not: only an operand may stay behind."""

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
            # a 0-dim CPU tensor strays only when written into: the schema is read only where one is there
            scalars = any(t.dim() == 0 and t.device.type == "cpu" for t in tensors)
            written = written_operands(func, args, kwargs) if scalars else []
            strays = [t for t in tensors if t.device.type == "cpu" and (t.dim() > 0 or any(t is w for w in written))]
            other = next((t.device.type for t in tensors if t.device.type != "cpu"), None)
            if strays and other is not None:
                shapes = ", ".join(str(list(t.shape)) for t in strays[:4])
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, {other} and cpu! (in {func.overloadpacket.__name__}; "
                                   f"{CPU_OPERAND_SHAPES} {shapes})")
            refused = refused_by_a_gpu(func.overloadpacket.__name__, [(t.device.type, t.dtype) for t in tensors])
            if refused is not None:
                raise RuntimeError(refused)
        return func(*args, **kwargs)


@functools.lru_cache(maxsize=1024)
def aliased_arguments(operator_) -> tuple[tuple[int, str, bool], ...]:
    """(position, name, written) of each argument whose memory the operator's schema aliases: `Tensor(a!)` written
    (`self` of an in-place operator, `out=`), `Tensor(a)` viewed. Read once per operator."""
    schema = getattr(operator_, "_schema", None)  # the parent's `getitem` is Python's
    if schema is None:
        return ()
    return tuple((index, argument.name, argument.alias_info.is_write)
                 for index, argument in enumerate(schema.arguments) if argument.alias_info is not None)


def argument(args, kwargs, position: int, name: str):
    """An operator's argument as given, by position or by keyword."""
    return args[position] if position < len(args) else kwargs.get(name)


def written_operands(operator_, args, kwargs) -> list:
    """The operands an operator writes into, by its schema."""
    return [argument(args, kwargs, position, name)
            for position, name, written in aliased_arguments(operator_) if written]


INTEGER_PRODUCTS = frozenset({"mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot"})
"""Matrix products a GPU has no kernel for in an integer dtype (`"addmm_cuda" not implemented for 'Long'`), which the
meta device, the FakeTensor and the CPU all compute: code that catches the GPU's error would take a path there that
no stand-in meets (red team on the first lab: a mask left on the CPU in the `except` branch kept the device point)."""


def refused_by_a_gpu(packet: str, operands: list[tuple[str, torch.dtype]]) -> str | None:
    """What a GPU raises where a stand-in computes, from each operand's (device, dtype): an integer matrix product of
    a tensor on the GPU's device."""
    if packet in INTEGER_PRODUCTS and any(device != "cpu" for device, _ in operands):
        integer = next((dtype for _, dtype in operands if not (dtype.is_floating_point or dtype.is_complex)), None)
        if integer is not None:
            return f'"{packet}_cuda" not implemented for \'{str(integer).removeprefix("torch.")}\''
    return None
