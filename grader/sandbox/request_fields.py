"""What every probe request's fields are checked against: the devices, dtypes and regimes a probe takes, the
frozen keyword-only dataclass a request is, and the checks its fields share. A failed check is `BadRequest`, the
grader's bug (grader/sandbox/requests.py says why)."""
from __future__ import annotations

import dataclasses
import functools

import torch

from grader.errors import GraderError

DEVICES = ("cpu", "cuda", "meta", "fake-cuda", "cpu-beside-a-gpu")  # meta and a FakeTensor stand in for a GPU
# (`probes._place`); the last is the CPU of a machine with a GPU (grader/graph/devices.CPU_BESIDE_A_GPU)
DTYPES = ("float16", "bfloat16", "float32", "float64")
MODES = ("eval", "train")
REGIMES = ("training", "inference")
"""How real use hands code its inputs (`graph_probes.in_regime`): `training`, with gradients on, the inputs made by
an operation from leaves that need grad (as a projection makes them) and the module's parameters needing grad;
`inference`, under `torch.no_grad()`, plain inputs, the parameters still needing grad as in a trained model. A
request without one is in `training` where it asks for gradients and in `inference` elsewhere."""
FIELD_TYPES = {"int": int, "float": float}


class BadRequest(GraderError):
    """A request the grader should never have made (a check's typo), or one the worker cannot apply."""


def _request(cls):
    """A frozen, keyword-only dataclass whose construction errors are `BadRequest`s."""
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    init = cls.__init__

    @functools.wraps(init)
    def checked_init(self, *args, **fields):
        try:
            init(self, *args, **fields)
        except TypeError as error:  # an unknown or missing field: the check's typo
            raise BadRequest(f"{cls.__name__}: {error}") from None

    cls.__init__ = checked_init
    return cls


def _require(condition: bool, request: object, problem: str) -> None:
    if not condition:
        raise BadRequest(f"{type(request).__name__}: {problem}")


def _is(value, kind: type) -> bool:
    """Exact type (a bool is no int here)."""
    return type(value) is kind


def _float_tensor(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point() and not value.requires_grad


def _check_flags(request, names: tuple[str, ...]) -> None:
    for name in names:
        _require(_is(getattr(request, name), bool), request, f"{name} must be a bool")


def _check_regime(request, regime) -> None:
    _require(regime is None or regime in REGIMES, request, f"a regime must be None or one of {REGIMES}")
    _require(not request.grad or regime in (None, "training"), request, "gradients are taken in the training regime")


def _check_cotangent(request, shape: tuple[int, ...]) -> None:
    if not request.grad:
        _require(request.cotangent is None, request, "a cotangent without grad=True")
        return
    _require(_float_tensor(request.cotangent) and tuple(request.cotangent.shape) == tuple(shape), request,
             f"grad=True needs a floating-point cotangent of the output's shape {tuple(shape)}")
