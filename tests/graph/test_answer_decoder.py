"""Does the parent's answer decoder (grader.sandbox.answers) build exactly what torch.load(weights_only=True)
builds from what torch.save writes, and refuse a storage, view or record a probe never writes?"""
from __future__ import annotations

import collections
import io
import os
import pickle
import re
import subprocess
import zipfile

import pytest
import torch

from grader.sandbox import answers

pytestmark = pytest.mark.unit


def saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def rewritten(frame: bytes, **records: bytes) -> bytes:
    """The frame's zip with some records replaced, stored as torch.save stores them (CRC-32s correct)."""
    with zipfile.ZipFile(io.BytesIO(frame)) as original:
        contents = {name: original.read(name) for name in original.namelist()}
    contents.update({f"archive/{name.replace('__', '/')}": data for name, data in records.items()})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in contents.items():
            archive.writestr(name, data)
    return out.getvalue()


def same(expected, decoded) -> bool:
    if isinstance(expected, torch.Tensor):
        return (type(decoded) is torch.Tensor and decoded.dtype == expected.dtype and decoded.shape == expected.shape
                and decoded.stride() == expected.stride() and decoded.storage_offset() == expected.storage_offset()
                and torch.equal(decoded, expected))
    if isinstance(expected, (dict, list)):
        pairs = (zip(expected.values(), decoded.values()) if isinstance(expected, dict) else zip(expected, decoded))
        return (type(decoded) is type(expected) and len(decoded) == len(expected)
                and (not isinstance(expected, dict) or list(decoded) == list(expected))
                and all(same(e, d) for e, d in pairs))
    return type(decoded) is type(expected) and decoded == expected


BASE = torch.arange(24.0).reshape(2, 3, 4)
ANSWERS = {
    "views of one storage": {"all": BASE, "slice": BASE[:, 1:, ::2], "transposed": BASE.transpose(0, 2),
                             "row": BASE[1, 2], "element": BASE[0, 0, 3]},
    "every dtype": {str(dtype): (torch.arange(6) % 2).to(dtype).reshape(2, 3)
                    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                                  torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)},
    "empty and scalar": {"empty": torch.empty(0, 3), "scalar": torch.tensor(2.5), "long scalar": torch.tensor(7)},
    "what a probe sends": {"out": {"kind": "tensor", "shape": [2, 4], "value": torch.randn(2, 4)},
                           "calls": [{"ops": 41, "op_names": ["mm", "softmax"], "grads": None}], "scale": 0.125,
                           "error": None, "flags": [True, False], "big": 3 << 30, "negative": -5, "text": "注意力"},
    "the same tensor twice": {"a": [BASE, BASE], "b": {"c": BASE}},
}


@pytest.mark.parametrize("name", ANSWERS)
def test_decoding_builds_what_torch_load_builds(name):
    frame = saved(ANSWERS[name])
    decoded = answers.decode(frame)
    assert same(torch.load(io.BytesIO(frame), weights_only=True), decoded)
    assert same(ANSWERS[name], decoded)


def test_views_of_one_storage_share_it_once_decoded():
    decoded = answers.decode(saved(ANSWERS["views of one storage"]))
    pointers = {t.untyped_storage().data_ptr() for t in decoded.values()}
    assert len(pointers) == 1


def test_each_answer_gets_its_own_storages():
    """One unpickler class serves every answer: two answers whose storages share a key (both "0") decode to their
    own values, and the second never reads the first's storage."""
    first, second = answers.decode(saved({"t": torch.zeros(3)})), answers.decode(saved({"t": torch.ones(3)}))
    assert torch.equal(first["t"], torch.zeros(3)) and torch.equal(second["t"], torch.ones(3))
    assert first["t"].untyped_storage().data_ptr() != second["t"].untyped_storage().data_ptr()


def test_a_storage_record_shorter_than_its_elements_is_refused():
    frame = saved({"t": torch.zeros(8)})
    with pytest.raises(answers.AnswerRefused, match="a storage of 8"):
        answers.decode(rewritten(frame, data__0=bytes(16)))


def test_a_view_beyond_its_storage_is_refused():
    """The storage holds 4 floats, the view claims 8 of them: `set_` refuses, nothing is read past the record."""
    frame = saved({"t": torch.zeros(8)})
    with zipfile.ZipFile(io.BytesIO(frame)) as archive:
        pickled = archive.read("archive/data.pkl")
    shrunk = re.sub(rb"(X\x03\x00\x00\x00cpuq.)K\x08", lambda found: found[1] + b"K\x04", pickled)
    assert shrunk != pickled
    with pytest.raises(answers.AnswerRefused, match="does not load"):
        answers.decode(rewritten(frame, data__0=bytes(16), **{"data.pkl": shrunk}))


def test_a_storage_the_answer_does_not_hold_is_refused():
    frame = saved({"t": torch.zeros(2)})
    with zipfile.ZipFile(io.BytesIO(frame)) as archive:
        pickled = archive.read("archive/data.pkl")
    with pytest.raises(answers.AnswerRefused, match="does not hold"):
        answers.decode(rewritten(frame, **{"data.pkl": pickled.replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x009")}))


def test_a_record_that_does_not_match_its_crc_is_refused():
    frame = bytearray(saved({"t": torch.full((4,), 1.5)}))
    at = frame.index(torch.full((4,), 1.5).numpy().tobytes())
    frame[at] ^= 0xFF
    with pytest.raises(answers.AnswerRefused, match="CRC-32"):
        answers.decode(bytes(frame))


def test_a_tensor_that_requires_grad_is_refused():
    with pytest.raises(answers.AnswerRefused, match="requires grad"):
        answers.decode(saved({"t": torch.zeros(2, requires_grad=True)}))


# The trusted parent on its own: the scan in front (grader.sandbox.answer_pickle) switched off, so each refusal
# below is the decoder's own. Its documented limits are written here as literals: a pickle record of at most
# 16 KiB, and no global but torch's storage types, its tensor rebuild and OrderedDict.
PICKLE_CAP_BYTES = 16 * 1024


@pytest.fixture
def scan_off(monkeypatch):
    monkeypatch.setattr(answers, "scan", lambda data, max_string: None)


def with_pickle(pickled: bytes) -> bytes:
    return rewritten(saved({"t": torch.zeros(1)}), **{"data.pkl": pickled})


def pickle_of_size(size: int) -> bytes:
    """A protocol-2 pickle of an answer (a dict of short strings) exactly `size` bytes long."""
    strings = {f"s{n}": str(n) * 4000 for n in range(size // 4000 - 1)} | {"pad": "y"}  # distinct: none memoised
    strings["pad"] += "y" * (size - len(pickle.dumps(strings, protocol=2)))  # the pickle grows by one byte a "y"
    pickled = pickle.dumps(strings, protocol=2)
    assert len(pickled) == size, (len(pickled), size)
    return pickled


@pytest.mark.usefixtures("scan_off")
@pytest.mark.parametrize("named", [eval, os.system, subprocess.Popen, collections.Counter],
                         ids=lambda f: f"{f.__module__}.{f.__qualname__}")
def test_the_decoder_alone_refuses_a_global_outside_its_allow_list(named):
    """The unpickler resolves nothing the scan would have refused: a global it does not list is refused by name,
    never looked up (were it looked up, a later check could at best refuse its value, with another reason)."""
    with pytest.raises(answers.AnswerRefused, match=r"^the global "):
        answers.decode(with_pickle(pickle.dumps({"f": named}, protocol=2)))


@pytest.mark.usefixtures("scan_off")
def test_the_decoder_alone_refuses_a_pickle_over_16_kib():
    assert answers.decode(with_pickle(pickle_of_size(PICKLE_CAP_BYTES)))["pad"].startswith("y")
    with pytest.raises(answers.AnswerRefused, match=f"one pickle record of at most {PICKLE_CAP_BYTES} bytes"):
        answers.decode(with_pickle(pickle_of_size(PICKLE_CAP_BYTES + 1)))
