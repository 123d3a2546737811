"""How a request carries its tensors to the worker: dtype, shape and raw bytes, not pickle's default; one tensor
given twice arrives as one (pickle's memo), and `sameness` says which are one another or equal.

pickle reduces a tensor through `torch.save` of its storage (a zip written per tensor) and the worker
rebuilds it through `torch.load`: for a probe's few small tensors that is most of the request's cost.
A request is the parent's own, so the worker rebuilds each tensor as sent, distrusting nothing.
torch is imported when a request is made, not with the module: the fork server starts before the
grading process imports torch (`worker_process`).
"""
from __future__ import annotations

import copyreg
import io
import pickle


def _reduce(tensor):
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return rebuild, (str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape), data, tensor.requires_grad)


def rebuild(dtype: str, shape: tuple[int, ...], data: bytes, requires_grad: bool):
    import torch

    kind = getattr(torch, dtype)
    flat = torch.frombuffer(bytearray(data), dtype=kind) if data else torch.empty(0, dtype=kind)
    return flat.reshape(shape).requires_grad_(requires_grad)


def dumps(request: dict) -> bytes:
    import torch

    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, torch.Tensor: _reduce}  # plain tensors only; any other type as pickle does
    pickler.dump(request)
    return buffer.getvalue()


def alike(tensors: list, made) -> list:
    """`made(tensor)` of each tensor, once per tensor: one tensor handed as several inputs (self-attention's q, k and
    v) stays one tensor, as `decoys.sameness` sent it."""
    done: dict[int, torch.Tensor] = {}
    for tensor in tensors:
        if id(tensor) not in done:
            done[id(tensor)] = made(tensor)
    return [done[id(tensor)] for tensor in tensors]


def sameness(tensors: list, calls: list[int] | None = None) -> tuple:
    """Per tensor, what it is of an earlier one of the same call (`calls`, one per tensor; one call where None): that
    very tensor (`("is", j)`), a tensor with equal values (`("equal", j)`), or nothing (None). Decoys keep both, so
    code that asks `q is k` or `torch.equal(q, k)` takes on the decoys the path it takes on the parent's inputs:
    self-attention hands one tensor as q, k and v (red team on issue 42: a wrong self-attention path behind `q is k`
    was traced on three fresh decoys and kept its points)."""
    import torch

    calls = [0] * len(tensors) if calls is None else calls
    found: list = []
    for i, tensor in enumerate(tensors):
        earlier = [j for j in range(i) if calls[j] == calls[i]]
        same = next((("is", j) for j in earlier if tensors[j] is tensor), None)
        if same is None:
            same = next((("equal", j) for j in earlier if found[j] is None and tensors[j].shape == tensor.shape
                         and tensors[j].dtype == tensor.dtype and torch.equal(tensors[j], tensor)), None)
        found.append(same)
    return tuple(found)


def magnitude(tensor) -> float:
    """The scale a float tensor's values have, as a power of 4 of their root mean square (0 for zeros; 1 for another
    dtype, or where there is none): decoys and the replay of a graph are drawn at it, so code that branches on how
    large its inputs are (`if scores.abs().max().item() < 30`) takes on them the path it takes on the parent's inputs,
    ten times larger in some checks (red team on issue 42). Only the scale reaches the worker, never a value."""
    import math

    if not tensor.is_floating_point() or tensor.numel() == 0:
        return 1.0
    rms = tensor.detach().double().pow(2).mean().sqrt().item()
    if rms == 0:  # zeros stay zeros (a cache's unwritten slots, which honest code may assert are empty)
        return 0.0
    return 4.0 ** round(math.log(rms, 4)) if math.isfinite(rms) else 1.0
