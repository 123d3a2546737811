"""Decode one answer frame from a worker into plain data, refusing whatever a probe never sends.

A worker's answer is `torch.save` bytes (a zip of stored records: a pickle plus raw tensor
data), and student code can write any bytes onto the worker's pipe. Each layer bounds the next:
1. the zip (`stored_zip`): few records, every one stored (a deflated record, a decompression
   bomb, is refused before one byte is inflated), inside the frame and not overlapping;
2. the pickle record, scanned before it is unpickled (`answer_pickle`);
3. `torch.load(weights_only=True)` on a zip rewritten from the checked records, so torch reads
   exactly what was checked, whatever its own zip reader would make of the original bytes;
4. an iterative walk with a visit budget (a DAG of shared lists counts every path, so it cannot
   hide an exponential expansion) over exact types: dicts keyed by strings, lists, short strings,
   numbers, plain CPU tensors of bounded size.
Limits sit orders of magnitude above the largest honest answer (150 KB frame, 16 records,
1.6 KB pickle, 219 values, depth 7, 37 k tensor elements, 1.4 k-character string).
"""
from __future__ import annotations

import io

from grader.sandbox.answer_pickle import STORAGE_DTYPES, PickleRefused, scan
from grader.sandbox.stored_zip import ZipRefused, read_stored, write_stored

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
        scan(records[_pickle_record(records)][1], MAX_STRING)
    except ZipRefused as refused:
        raise AnswerRefused(f"answer zip refused: {refused}") from None
    except PickleRefused as refused:
        raise AnswerRefused(f"the answer's pickle holds {refused}") from None
    answer = _load(write_stored(records))
    _check_values(answer)
    return answer


def _pickle_record(records: dict[str, tuple[int, bytes]]) -> str:
    names = [name for name in records if name.casefold().endswith("/data.pkl") and name.count("/") == 1]
    if len(names) != 1 or len(records[names[0]][1]) > MAX_PICKLE_BYTES:
        raise AnswerRefused(f"the answer needs one pickle record of at most {MAX_PICKLE_BYTES} bytes")
    return names[0]


def _load(data: bytes) -> dict:
    import torch  # not at module level: the parent's CLI starts the fork server before importing torch

    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as error:  # any reason torch gives: the frame is not torch.save of an answer
        raise AnswerRefused(f"the answer does not load ({type(error).__name__}: {str(error)[:200]})") from error


def _check_values(answer: dict) -> None:
    """Exact types and sizes, level by level; every path to a value counts as a visit."""
    import torch

    if type(answer) is not dict:
        raise AnswerRefused("the answer is not a dict")
    dtypes = {getattr(torch, name) for name in STORAGE_DTYPES.values()}
    plain = (bool, float, type(None))
    level, visits, elements = [answer], 1, 0
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
