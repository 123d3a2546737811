"""Which two state tensors share an element of memory: the worker refuses to record a step on them and the judge to
thread them, since each side runs every input on a copy of its own, where two that share memory would part."""
from __future__ import annotations

import torch


def sharing_memory(tensors: list[torch.Tensor], names: list[str] | tuple[str, ...]) -> tuple[str, str] | None:
    """Two of `tensors` (by their `names`) that share an element of memory: the same tensor twice, or views that
    overlap; None where none do. Views of one storage that share no element (keys and values as the two halves of
    one buffer) are apart: each element is counted where it lies."""
    by_storage: dict[int, list[int]] = {}
    for position, tensor in enumerate(tensors):
        by_storage.setdefault(tensor.untyped_storage()._cdata, []).append(position)  # meta has no data_ptr
    for positions in by_storage.values():
        if len(positions) < 2:
            continue
        owner = torch.full((tensors[positions[0]].untyped_storage().nbytes(),), -1, dtype=torch.int64)
        for position in positions:
            tensor = tensors[position]
            size = tensor.element_size()
            as_bytes = owner.as_strided((*tensor.shape, size), (*(s * size for s in tensor.stride()), 1),
                                        tensor.storage_offset() * size)
            taken = as_bytes[as_bytes >= 0]
            if taken.numel():
                return names[int(taken[0])], names[position]
            as_bytes.fill_(position)
    return None
