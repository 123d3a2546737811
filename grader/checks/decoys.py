"""The decoys a graphed probe's worker traces on: the request with every tensor replaced by one of the same shape and
dtype and other values, so the worker never sees the inputs the parent grades on (grader.checks.student_code)."""
from __future__ import annotations

import torch


def decoys(fields: dict, drawn: dict[tuple, list[torch.Tensor]] | None = None) -> dict:
    """The request with every tensor replaced by one of the same shape and dtype and other values: the worker
    traces on these, and never sees the inputs the parent grades on. The values depend only on the shapes and dtypes
    in the order they are drawn (one generator seeded alike for every message), so `drawn`, one grading's record
    of the decoys it made by that order, hands a message that differs from an earlier one in other fields only
    (another device, regime or flag) the same tensors without drawing them again: the same bytes reach the worker."""
    tensors: list[torch.Tensor] = []

    def collect(value) -> None:  # in the order the decoys are drawn: depth first, dicts and lists in their order
        if isinstance(value, torch.Tensor):
            tensors.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(fields)
    drawn = {} if drawn is None else drawn
    order = tuple((tuple(tensor.shape), tensor.dtype) for tensor in tensors)
    if order not in drawn:
        generator = torch.Generator().manual_seed(0x5EED)
        drawn[order] = [torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype) for shape, dtype in order]
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
