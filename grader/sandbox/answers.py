"""Decode one answer frame from a worker into plain data, refusing whatever a probe never sends.

A worker's answer is `torch.save` bytes (a zip of stored records: a pickle plus raw tensor
data), and student code can write any bytes onto the worker's pipe. Each layer bounds the next:
1. the zip (`stored_zip`): few records, every one stored (a deflated record, a decompression
   bomb, is refused before one byte is inflated), inside the frame and not overlapping;
2. the pickle record, scanned before it is unpickled (`answer_pickle`);
3. the checked pickle unpickled by the C unpickler, whose only globals are the scan's (the tensor
   rebuild is this module's own, from the checked records' bytes, within their bounds) and whose
   storages come from the records the pickle names, each record's CRC-32 checked: no zip reader but
   `stored_zip` and nothing torch.load would run (its weights-only unpickler, in pure Python, took
   a quarter of the parent's CPU per grading, about 1.2 ms an answer);
4. an iterative walk with a visit budget (a DAG of shared lists counts every path, so it cannot
   hide an exponential expansion) over exact types: dicts keyed by strings, lists, short strings,
   numbers, plain CPU tensors of bounded size. A tensor object named several times (a constant the
   graphs of one answer share: one pickled object, so one object here) counts its elements once; every
   distinct tensor counts its own shape's elements, however its storage is shared.
Limits sit orders of magnitude above the largest honest answer (150 KB frame, 16 records,
1.6 KB pickle, 219 values, depth 7, 37 k tensor elements, 1.4 k-character string).
"""
from __future__ import annotations

import collections
import io
import pickle
import zlib

from grader.sandbox.answer_pickle import GLOBALS, STORAGE_DTYPES, PickleRefused, scan
from grader.sandbox.stored_zip import ZipRefused, read_stored

MAX_FRAME_BYTES = 16 << 20
MAX_RECORDS = 1024
MAX_PICKLE_BYTES = 16 << 10
MAX_VALUES = 100_000  # visits in the walk
MAX_DEPTH = 16
MAX_ITEMS = 4096  # per list or dict
MAX_STRING = 8192  # characters
MAX_ELEMENTS = 1 << 22  # tensor elements in one answer (a stride-0 view could claim far more than it stores)
MAX_INT = 1 << 63


class AnswerRefused(Exception):
    """The frame is not an answer a probe could have produced: tampering."""


def decode(frame: bytes) -> dict:
    """The answer in `frame`, or AnswerRefused saying which rule it broke."""
    try:
        records = read_stored(frame, MAX_RECORDS)
        pickle_name = _pickle_record(records)
        scan(records[pickle_name][1], MAX_STRING)
    except ZipRefused as refused:
        raise AnswerRefused(f"answer zip refused: {refused}") from None
    except PickleRefused as refused:
        raise AnswerRefused(f"the answer's pickle holds {refused}") from None
    answer = _load(records, pickle_name)
    _check_values(answer)
    return answer


def _pickle_record(records: dict[str, tuple[int, bytes]]) -> str:
    names = [name for name in records if name.casefold().endswith("/data.pkl") and name.count("/") == 1]
    if len(names) != 1 or len(records[names[0]][1]) > MAX_PICKLE_BYTES:
        raise AnswerRefused(f"the answer needs one pickle record of at most {MAX_PICKLE_BYTES} bytes")
    return names[0]


def _load(records: dict[str, tuple[int, bytes]], pickle_name: str) -> dict:
    try:
        return _AnswerUnpickler(_record(records, pickle_name), records, pickle_name.rsplit("/", 1)[0]).load()
    except AnswerRefused:
        raise
    except Exception as error:  # any reason the unpickler or torch gives: not torch.save of an answer
        raise AnswerRefused(f"the answer does not load ({type(error).__name__}: {str(error)[:200]})") from error


def _record(records: dict[str, tuple[int, bytes]], name: str) -> bytes:
    if name not in records:
        raise AnswerRefused(f"the answer names a record it does not hold ({name[:80]!r})")
    crc, data = records[name]
    if zlib.crc32(data) != crc:
        raise AnswerRefused(f"the record {name[:80]!r} does not match its CRC-32")
    return data


class _AnswerUnpickler(pickle.Unpickler):
    """The C unpickler of one answer: the scan's globals only, and storages from the answer's own records (a storage
    named twice is one storage, as torch.load makes it). Defined once, not per answer (a class made per answer cost
    about a seventh of the parent's decoding); an answer's records and storages are its instance's own."""

    def __init__(self, data: bytes, records: dict[str, tuple[int, bytes]], folder: str) -> None:
        super().__init__(io.BytesIO(data))
        self.records, self.folder, self.storages = records, folder, {}

    def find_class(self, module: str, name: str):
        import torch  # not at module level: the parent's CLI starts the fork server before importing torch

        kind = GLOBALS.get(f"{module}\n{name}")
        if kind == "storage-type":
            return getattr(torch, STORAGE_DTYPES[name])
        if kind == "rebuild-tensor":
            return _rebuild_tensor
        if kind == "ordered-dict-type":
            return collections.OrderedDict
        raise AnswerRefused(f"the global {module}.{name}")  # the scan refused it already

    def persistent_load(self, pid):
        import torch

        _, dtype, key, _, numel = pid  # the scan held its shape: ('storage', type, key, location, numel)
        if key not in self.storages:
            data = _record(self.records, f"{self.folder}/data/{key}")
            if len(data) != numel * dtype.itemsize:
                raise AnswerRefused(f"a storage of {numel} {dtype} elements in a record of {len(data)} bytes")
            self.storages[key] = (torch.frombuffer(bytearray(data), dtype=dtype) if data
                                  else torch.empty(0, dtype=dtype))
        return self.storages[key]


def _rebuild_tensor(storage, offset: int, size: tuple, stride: tuple, requires_grad: bool, hooks) -> object:
    """torch.save's tensor: a strided view of one storage, which `set_` holds inside the storage's bytes."""
    import torch

    if requires_grad or hooks:
        raise AnswerRefused("a tensor that requires grad or carries hooks")
    return torch.empty(0, dtype=storage.dtype).set_(storage.untyped_storage(), offset, size, stride)


def _check_values(answer: dict) -> None:
    """Exact types and sizes, level by level; every path to a value counts as a visit."""
    import torch

    if type(answer) is not dict:
        raise AnswerRefused("the answer is not a dict")
    dtypes = {getattr(torch, name) for name in STORAGE_DTYPES.values()}
    plain = (bool, float, type(None))
    level, visits, elements = [answer], 1, 0
    counted: set[int] = set()  # tensors already counted, alive in `answer` for the walk
    for depth in range(MAX_DEPTH + 1):
        below = []
        for value in level:
            kind = type(value)
            if kind is dict or kind is list:
                if len(value) > MAX_ITEMS:
                    raise AnswerRefused(f"a {kind.__name__} of {len(value)} items, above {MAX_ITEMS}")
                visits += len(value)
                if visits > MAX_VALUES:
                    raise AnswerRefused(f"the answer holds more than {MAX_VALUES} values (counting shared ones each time)")
                below.extend(value.values() if kind is dict else value)
            elif kind is str:
                if len(value) > MAX_STRING:
                    raise AnswerRefused(f"a string of {len(value)} characters, above {MAX_STRING}")
            elif kind is int:
                if not -MAX_INT <= value < MAX_INT:
                    raise AnswerRefused("an integer beyond 64 bits")
            elif kind is torch.Tensor:
                if id(value) in counted:  # one tensor object named again (the graphs of one answer share a constant)
                    continue
                counted.add(id(value))
                elements += value.numel()
                if (value.dtype not in dtypes or value.layout != torch.strided or value.device.type != "cpu"
                        or value.requires_grad or elements > MAX_ELEMENTS):
                    raise AnswerRefused(f"a tensor that is not a plain CPU tensor of a probe's size "
                                        f"({value.dtype}, {elements} elements so far, limit {MAX_ELEMENTS})")
            elif kind not in plain:
                raise AnswerRefused(f"a value of type {kind.__name__}")
        if not below:
            return
        level = below
    raise AnswerRefused(f"the answer nests deeper than {MAX_DEPTH} levels")
