"""Indexing and the other hand-bound Tensor methods, said in aten operators, for the FakeTensor stand-in.

On a CPU-only build torch's own `Tensor.__getitem__`, `__setitem__`, `__invert__`, `new_tensor`, `contiguous`,
`copy_` and a move to "cuda" without an index open a CUDA device guard that the build lacks: on the fake
stand-in they raise where a GPU would not. These say the same in operators the stand-in runs (select, slice, unsqueeze, index, index_put_,
masked_fill_, copy_): basic indexing (integers, slices, None, Ellipsis), a tensor index used alone, and a boolean
mask of the last dims set after an Ellipsis. Any other index raises (`Unsupported`), which the device checks read
as inconclusive.
"""
from __future__ import annotations

import numbers

import torch


class Unsupported(RuntimeError):
    """An index the stand-in does not say (mixed basic and tensor indices, lists)."""


GPU = torch.device("cuda", 0)


def _as_tuple(index) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _is_integer(item) -> bool:
    return isinstance(item, numbers.Integral) and not isinstance(item, bool)


def _basic(tensor: torch.Tensor, index: tuple) -> torch.Tensor:
    """The view Python's basic indexing gives."""
    if not all(item is None or item is Ellipsis or _is_integer(item) or isinstance(item, slice) for item in index):
        raise Unsupported(f"an index of types {[type(item).__name__ for item in index]} on the FakeTensor stand-in")
    if sum(item is Ellipsis for item in index) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    addressed = sum(1 for item in index if item is not None and item is not Ellipsis)
    if addressed > tensor.dim():
        raise IndexError(f"too many indices for tensor of dimension {tensor.dim()}")
    filled: list = []
    for item in index:
        filled += [slice(None)] * (tensor.dim() - addressed) if item is Ellipsis else [item]
    view, dim = torch.ops.aten.alias.default(tensor), 0
    for item in filled:
        if item is None:
            view, dim = view.unsqueeze(dim), dim + 1
        elif isinstance(item, slice):
            step = 1 if item.step is None else item.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            view, dim = torch.ops.aten.slice.Tensor(view, dim, item.start, item.stop, step), dim + 1
        else:
            view = view.select(dim, item)
    return view


def _tensor_index(index: tuple) -> list | None:
    """The tensors of an index made of tensors only (as aten.index takes them), else None."""
    return list(index) if index and all(isinstance(item, torch.Tensor) for item in index) else None


def getitem(tensor: torch.Tensor, index) -> torch.Tensor:
    index = _as_tuple(index)
    tensors = _tensor_index(index)
    return torch.ops.aten.index.Tensor(tensor, tensors) if tensors else _basic(tensor, index)


def setitem(tensor: torch.Tensor, index, value) -> None:
    index = _as_tuple(index)
    trailing_mask = len(index) == 2 and index[0] is Ellipsis and isinstance(index[1], torch.Tensor) \
        and index[1].dtype == torch.bool  # `scores[..., future] = -inf`: the mask covers the last dims
    tensors = _tensor_index(index[1:] if trailing_mask else index)
    if tensors and len(tensors) == 1 and tensors[0].dtype == torch.bool and not isinstance(value, torch.Tensor):
        tensor.masked_fill_(tensors[0], value)
    elif tensors:
        value = value if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=tensor.dtype, device=GPU)
        tensor.index_put_(tensors, value)
    elif isinstance(value, torch.Tensor):  # aten's copy_ and fill_: the bound methods open the guard too
        torch.ops.aten.copy_.default(_basic(tensor, index), value)
    else:
        torch.ops.aten.fill_.Scalar(_basic(tensor, index), value)


def invert(tensor: torch.Tensor) -> torch.Tensor:
    return torch.bitwise_not(tensor)


def new_tensor(tensor: torch.Tensor, data, dtype=None, device=None, requires_grad=False) -> torch.Tensor:
    return torch.tensor(data, dtype=dtype or tensor.dtype, device=_indexed(device) or tensor.device)


def _indexed(device):
    """"cuda" with its index: without one, torch asks the CUDA runtime which device is current (and a bare index is
    a CUDA device's, which a CPU-only build cannot parse)."""
    if _is_integer(device):
        return torch.device("cuda", device)
    if device is not None and torch.device(device).type == "cuda" and torch.device(device).index is None:
        return GPU
    return device


def to(tensor: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    args = tuple(_indexed(a) if isinstance(a, (str, torch.device)) else a for a in args)
    if "device" in kwargs:
        kwargs["device"] = _indexed(kwargs["device"])
    return torch.Tensor.to(tensor, *args, **kwargs)


def contiguous(tensor: torch.Tensor, memory_format=torch.contiguous_format) -> torch.Tensor:
    return tensor if tensor.is_contiguous(memory_format=memory_format) else tensor.clone(memory_format=memory_format)


def copy_(tensor: torch.Tensor, source: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    return torch.ops.aten.copy_.default(tensor, source, non_blocking)


def cuda(tensor: torch.Tensor, device=None, non_blocking=False, **kwargs) -> torch.Tensor:
    return torch.Tensor.to(tensor, _indexed(device if device is not None else "cuda"), non_blocking=non_blocking)


BY_HAND = {torch.Tensor.__getitem__: getitem, torch.Tensor.__setitem__: setitem, torch.Tensor.__invert__: invert,
           torch.Tensor.new_tensor: new_tensor, torch.Tensor.to: to, torch.Tensor.cuda: cuda,
           torch.Tensor.contiguous: contiguous, torch.Tensor.copy_: copy_}
