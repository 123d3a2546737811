"""The second stand-in for a GPU: torch's FakeTensor on a "cuda" device, beside the meta one.

Runs inside the sandbox worker. On a CPU-only build a FakeTensor can still claim `cuda:0`: it says
`is_meta` False and `is_cuda` True, `type()` names `torch.cuda.FloatTensor`, and an operator that mixes
it with a CPU tensor raises as a GPU does. Code that special-cases the meta stand-in (`Q.is_meta`, "meta" in
its text) takes its other path here and meets the mismatch; to gain a point it would have to tell both
stand-ins from a real GPU. The parent holds a graph traced here to the same device checks as the meta one
(`grader/graph/devices.STAND_INS`).

A fake CUDA tensor has no device guard on a CPU-only build. Autograd aborts the process when it builds the
gradient edge of one, so the stand-in runs without gradients, and an operator asked to record gradients on it
(code that turns them on itself) is refused with a Python error. The few Tensor methods torch binds by hand
with a device guard (indexing, `~`, `new_tensor`, a move to "cuda" without an index) raise; `OnTheFake` says
them with the operators they stand for. What else raises there is read by the checks as inconclusive.
"""
from __future__ import annotations

import contextlib

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, unset_fake_temporarily
from torch.overrides import TorchFunctionMode

from grader.sandbox import fake_indexing

GPU = torch.device("cuda", 0)
"""With its index: a device without one asks the CUDA runtime which is current, which a CPU-only build lacks."""
_mode: FakeTensorMode | None = None


class _StandInMode(FakeTensorMode):
    """A fake mode that knows the build has no CUDA even while `torch.cuda.is_available()` answers True for the
    student's code (`stand_in_cuda`): it then never runs an operator on a small constant for real on
    "cuda". Its dispatch runs without torch's dynamo-disabling shim (a frame and a lookup at every operator, as
    for the tracer's `Recorder`): nothing in the worker compiles."""

    avoid_device_init = True
    __torch_dispatch__ = FakeTensorMode.__dict__["__torch_dispatch__"].__wrapped__

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False


def _fake_mode() -> FakeTensorMode:
    """One mode per process, made in the fork server by `warm_up` (it imports torch._dynamo, seconds once)."""
    global _mode
    if _mode is None:
        _mode = _StandInMode(allow_non_fake_inputs=True)
    return _mode


def is_fake(value) -> bool:
    return isinstance(value, FakeTensor)


def on_a_stand_in(value) -> bool:
    """A tensor on either stand-in for a GPU: the meta device, or a FakeTensor."""
    return isinstance(value, torch.Tensor) and (value.is_meta or is_fake(value))


def real():
    """Operators on real tensors while the stand-in is active (the tracer's copies of constants, its encoding)."""
    return unset_fake_temporarily()


def place(tensor: torch.Tensor) -> torch.Tensor:
    """A fake CUDA tensor with the decoy's shape and dtype (like the meta stand-in, it holds no values)."""
    with _fake_mode():
        return torch.empty(tensor.shape, dtype=tensor.dtype, device=GPU)


def move(module: torch.nn.Module) -> torch.nn.Module:
    """`module.to("cuda")` on the stand-in: each parameter and buffer replaced by a fake CUDA tensor of its shape
    and dtype (its values are sent to the parent from before the move, as on meta)."""
    with torch.no_grad(), _fake_mode():
        return module._apply(lambda tensor: torch.empty(tensor.shape, dtype=tensor.dtype, device=GPU))


class OnTheFake(TorchFunctionMode):
    """What a fake CUDA tensor cannot do through torch's own bindings on a CPU-only build, said in operators it
    can (`grader/sandbox/fake_indexing.py`); and, in Python, a refusal of what would abort the worker in C++:
    autograd recording an operator on a fake CUDA tensor that requires grad."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.is_grad_enabled() and any(is_fake(t) and t.requires_grad for t in tensors_in(args, kwargs)):
            raise RuntimeError("the FakeTensor stand-in for a GPU computes no gradients")
        if args and is_fake(args[0]) and func in fake_indexing.BY_HAND:
            return fake_indexing.BY_HAND[func](*args, **kwargs)
        return func(*args, **kwargs)


def tensors_in(args, kwargs):
    """The tensors among a call's arguments, one level into lists and tuples."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, torch.Tensor))
        elif isinstance(value, torch.Tensor):
            yield value


@contextlib.contextmanager
def active():
    with torch.no_grad(), _fake_mode(), OnTheFake():
        yield


def warm_up() -> None:
    """The fake mode's first operator imports torch._dynamo: done once in the fork server, not in each worker."""
    x = place(torch.empty(2, 2))
    with active():
        mask = torch.ones(2, 2, dtype=torch.bool, device=x.device).triu(1)
        (x @ x.transpose(-2, -1) / 2).masked_fill(mask, float("-inf")).softmax(-1)
