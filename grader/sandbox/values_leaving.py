"""Where values leave a tensor for Python while student code is traced, and, on a stand-in for a GPU, the few reads
below the dispatcher that a copy to the CPU answers.

The recorder (`grader/sandbox/tracing.py`) sees every read at its root in the dispatcher (`reads_values`); the Python
calls below it are seen here (`ValuesLeaving`). A trace whose values left stands for the code only where a replay on
other values agrees (`graph_probes._recorded`), and on a stand-in only where the read was answered as a GPU answers it
(`grader/sandbox/stand_in_values.py`).
"""
from __future__ import annotations

import functools
import sys

import torch
from torch.overrides import TorchFunctionMode

from grader.sandbox import fake_gpu


METADATA_QUERIES = frozenset({
    "is_floating_point", "is_complex", "is_signed", "is_conj", "is_neg", "is_inference", "is_same_size",
    "is_contiguous", "is_strides_like_format", "is_non_overlapping_and_dense", "is_pinned", "is_coalesced", "is_leaf",
    "output_nr", "_version", "dim", "size", "stride", "numel", "storage_offset", "sym_size", "sym_stride",
    "sym_numel", "sym_storage_offset", "_nnz", "dense_dim", "sparse_dim", "qscheme", "device", "layout"})
"""Operators that answer with a Python value read from a tensor's shape, dtype or layout, never from its values."""

BELOW_THE_DISPATCHER = (torch.Tensor.numpy, torch.Tensor.__array__, torch.Tensor.tolist, torch.Tensor.untyped_storage,
                        torch.Tensor.storage, torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__,
                        torch.Tensor.__complex__)
"""The ways values leave that may never reach the dispatcher: a NumPy view, a list and a storage read a CPU tensor's
memory directly; `int()`, `float()`, an index and `complex()` are bound by hand with a device guard, which raises
before the dispatcher on the FakeTensor stand-in of a CPU-only build."""
READ_THROUGH_A_COPY = (torch.Tensor.tolist, torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__,
                       torch.Tensor.__complex__)
"""Of those, the reads a GPU tensor answers by a copy to the CPU (NumPy and storages refuse one)."""


@functools.lru_cache(maxsize=4096)
def reads_values(func) -> bool:
    """Whether an operator hands a tensor's values to Python: it returns no tensor, only Python values (a number,
    a bool), and is not a query of shape or layout. This is the root of `.item()`, `bool()`, `int()`, `float()`,
    an index, `torch.is_nonzero`, `torch.equal`, `allclose` and whatever else ends in `_local_scalar_dense`, however
    the code spelled it; an operator not known to read only metadata counts as reading values."""
    returns = func._schema.returns
    if not returns or any("Tensor" in str(r.type) for r in returns):
        return False
    return func.overloadpacket.__name__ not in METADATA_QUERIES


class ValuesLeaving(TorchFunctionMode):
    """The student's line where values first left for Python, if they did (`where`, as describe_error says it).

    The recorder tells it of each operator that hands values to Python (`reads_values`, at the dispatcher, so no
    spelling escapes it); the few ways below the dispatcher are seen here as Python calls. With `stand_in_only`
    (a trace on a stand-in for a GPU) only values on the stand-in's own device count: a CPU constant's value (a
    FakeTensor on the CPU keeps it) is the same on a GPU, while a stand-in has none to give, so code that reads
    one, even inside a `try`, is not judged there, save where the recorder answers the read as a GPU would
    (`stand_in_values`): then nothing is noted. A real tensor (a copy the recorder answered) is read as itself."""

    def __init__(self, source_file: str, lines: list[str], stand_in_only: bool = False) -> None:
        super().__init__()
        self.source_file, self.lines, self.stand_in_only = source_file, lines, stand_in_only
        self.where: dict | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in BELOW_THE_DISPATCHER:
            copy = self._answered_copy(func, args)
            if copy is not None:
                with fake_gpu.real():
                    return func(copy, *args[1:], **(kwargs or {}))
            self.saw(args, kwargs or {})
            if self.stand_in_only and args and isinstance(args[0], torch.Tensor) and not fake_gpu.is_fake(args[0]):
                with fake_gpu.real():  # the fake mode would hand NumPy a fake's empty memory
                    return func(*args, **(kwargs or {}))
        return func(*args, **(kwargs or {}))

    def _answered_copy(self, func, args) -> torch.Tensor | None:
        """On a stand-in, `int(t)`, `float(t)`, `t.tolist()` read what a GPU hands back as `t.cpu()` does: the copy
        the recorder answers (`stand_in_values`), the same read as `t.item()` spelled otherwise; None where the copy
        is not answered (the read then leaves as before)."""
        if not (self.stand_in_only and func in READ_THROUGH_A_COPY and args and isinstance(args[0], torch.Tensor)
                and fake_gpu.on_a_stand_in(args[0])):
            return None
        try:
            copy = args[0].to("cpu")
        except Exception:  # not answered: a copy off a stand-in raises, as the move it is
            return None
        return copy if copy.device.type == "cpu" and not fake_gpu.is_fake(copy) else None

    def saw(self, args, kwargs) -> None:
        """Values of these arguments go to Python: note the student's line that made them go."""
        if self.where is not None:
            return
        if self.stand_in_only and not any(t.device.type != "cpu" for t in fake_gpu.tensors_in(args, kwargs)):
            return
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename != self.source_file:
            frame = frame.f_back
        if frame is not None:
            line = frame.f_lineno
            text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
            self.where = {"line": line, "text": text[:1000], "function": frame.f_code.co_name[:200]}
