"""The decoys a graphed probe's worker traces on: the request with every tensor replaced by one of the same shape and
dtype and other values, so the worker never sees the inputs the parent grades on (grader.checks.student_code)."""
from __future__ import annotations

import torch

from grader.sandbox.request_tensors import magnitude, sameness


def tensors_in(fields) -> list[torch.Tensor]:
    """The request's tensors in the order the decoys are drawn: depth first, dicts and lists in their order."""
    return [tensor for tensor, _ in _with_calls(fields)]


def calls_of(fields) -> list[int]:
    """Per tensor (in `tensors_in`'s order), the call it belongs to: the item of the request's list it lies in (a
    module probe's `calls`), or -1 for one outside every list."""
    return [call for _, call in _with_calls(fields)]


def _with_calls(fields) -> list[tuple[torch.Tensor, int]]:
    found: list[tuple[torch.Tensor, int]] = []

    def collect(value, call: int) -> None:
        if isinstance(value, torch.Tensor):
            found.append((value, call))
        elif isinstance(value, dict):
            for item in value.values():
                collect(item, call)
        elif isinstance(value, list):
            for position, item in enumerate(value):
                collect(item, position if call < 0 else call)

    collect(fields, -1)
    return found


def decoys(fields: dict, drawn: dict[tuple, list[torch.Tensor]] | None = None) -> dict:
    """The request with every tensor replaced by one of the same shape and dtype and other values: the worker
    traces on these, and never sees the inputs the parent grades on; each is drawn at its input's `magnitude`, so
    code that reads how large its inputs are takes the path there it takes on them. A tensor given twice to one call
    is one decoy given twice, and tensors of one call with equal values get equal decoys (`sameness`); two calls
    never share one (a module that remembers an input's output would answer the second call from the first on the
    decoys alone). The values depend only on the shapes, dtypes, magnitudes and sameness in the order they are drawn
    (one generator seeded alike for every message), so `drawn`, one grading's record of the decoys it made by that
    order, hands a message that differs from an earlier one in other fields only (another device, regime or flag) the
    same tensors without drawing them again: the same bytes reach the worker."""
    tensors = tensors_in(fields)
    drawn = {} if drawn is None else drawn
    pattern = sameness(tensors, calls_of(fields))
    order = (tuple((tuple(tensor.shape), tensor.dtype, magnitude(tensor)) for tensor in tensors), pattern)
    if order not in drawn:
        generator = torch.Generator().manual_seed(0x5EED)
        made = [(torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype)
                for shape, dtype, scale in order[0]]
        for i, same in enumerate(pattern):
            if same is not None:
                made[i] = made[same[1]] if same[0] == "is" else made[same[1]].clone()
        drawn[order] = made
    decoys = iter(drawn[order])

    def decoy(value):
        if isinstance(value, torch.Tensor):
            return next(decoys)
        if isinstance(value, dict):
            return {key: decoy(item) for key, item in value.items()}
        if isinstance(value, list):
            return [decoy(item) for item in value]
        return value

    return {key: decoy(value) for key, value in fields.items()}
