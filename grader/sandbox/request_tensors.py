"""How a request carries its tensors to the worker: dtype, shape and raw bytes, not pickle's default.

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
