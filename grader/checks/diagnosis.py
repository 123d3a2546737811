"""Name the mistake behind a failure: from the exception a probe reported, or from numbers that
match one of the reference's wrong variants."""
from __future__ import annotations

import math
import re

import torch

from grader.exercises import every_graded_name
from grader.exercises.attention import GRADED_NAME
from grader.graph.devices import CPU_OPERAND_SHAPES

DEVICE_MISMATCH = re.compile(
    r"Expected all tensors to be on the same device|is not on the expected device|"
    r"found at least two devices|Expected .* to be on .* device|FakeTensor is wrapped to wrong device", re.I)
NO_CUDA = re.compile(r"Torch not compiled with CUDA|Found no NVIDIA driver|No CUDA GPUs are available|"
                     r"CUDA driver initialization failed|cuda requested on a machine without CUDA", re.I)
DEVICE_MESSAGE_HEAD = 1000  # characters
DEVICE_MISTAKES = {"mask-device", "hardcoded-device", "mask-not-buffer", "layers-in-forward", "constant-device"}
SIZE_MISMATCH = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
# what code written for one rank raises on another: Q.size(2) or transpose(1, 2) on (T, d), B, T, d = Q.shape
# on (B, H, T, d), bmm or a fixed einsum/einops pattern on anything but its rank, shapes that no longer line up
RANK_ERROR = re.compile(r"Dimension out of range|values to unpack|must be a 3D tensor|Expected \d-dimensional|"
                        r"einsum\(\)|permute|is invalid for input of size|size of tensor a|Expected size for first|"
                        r"cannot be multiplied|tuple index out of range|Wrong shape|dims? mismatch|number of dimensions",
                        re.I)
# a dim that is no axis of any input the probes send (at most 5 dims): a size passed where softmax wants
# its dim, as in `softmax(scores, d_k)`; an axis of another rank (`dim=3` on 3-D input) is hardcoded-dims
NOT_AN_AXIS = re.compile(r"Dimension out of range \(expected to be in range of \[-\d+, \d+\], but got (-?\d+)\)")
LARGEST_PROBED_RANK = 5


def quoted(error: dict, limit: int = 600) -> str:
    """A student's exception as one line of a message: `Type: message`. Its own line breaks become ⏎, so no line of
    the report can be written by the student's text (a forged "Score: 20 / 20" line under a check)."""
    kind, message = error.get("type"), error.get("message", "")
    said = f"{kind}: {message}".strip().rstrip(":") if kind else message  # a bare NotImplementedError
    return " ⏎ ".join(line for line in said.splitlines() if line.strip())[:limit]

# (exception type or None for any, message pattern, mistake id): first match wins.
ERROR_RULES = [
    ("NotImplementedError", r"^(?!.*meta tensor)", "not-implemented"),  # not torch's own "no data on meta"
    ("UnsupportedOperator", r"", "unsupported-op"),  # grader/graph/answers.py: an operator off the allow-list
    ("Untraceable", r"", "untraceable"),  # grader/graph/answers.py: values left the graph where the line says
    (None, r"^timeout$", "timeout"),
    (None, r"^memory-limit$", "memory-limit"),
    (None, r"^submission-too-costly$", "submission-too-costly"),  # a graph that ended or exhausted the judge
    ("MemoryError", r"", "memory-limit"),
    (None, r"can't allocate memory|not enough memory|out of memory|DefaultCPUAllocator", "memory-limit"),
    (None, r"^(exited|crashed|tampering)$", "tampering"),
    ("SystemExit", r"", "tampering"),
    ("PermissionError", r"grading sandbox", "tampering"),
    ("BlockingIOError", r"Resource temporarily unavailable", "tampering"),
    ("SyntaxError", r"", "syntax-error"),
    ("IndentationError", r"", "syntax-error"),
    ("NameError", r"name 'matmul' is not defined", "bare-matmul"),
    ("NameError", rf"name '({'|'.join(every_graded_name())})' is not defined", "not-implemented"),
    ("AttributeError", r"module 'torch' has no attribute 'T[a-z]+'", "misspelled-tensor"),
    ("AttributeError", r"module 'torch\.nn' has no attribute 'dropout'", "dropout-lowercase"),
    ("AttributeError", r"'ModelArgs' object has no attribute", "args-field-name"),
    ("AttributeError", r"has no attribute 'is_ca\w*'", "is-causal-typo"),
    ("TypeError", r"unexpected keyword argument 'is_causal'", "is-causal-typo"),
    ("TypeError", r"\br?sqrt\(\): argument 'input' \(position 1\) must be Tensor, not (int|float)", "sqrt-of-int"),
    (None, r"view size is not compatible with input tensor's size and stride", "missing-contiguous"),
    (None, r"masked_fill_? only supports boolean masks|where expected condition to be a boolean tensor", "mask-not-bool"),
    (None, r"Boolean value of Tensor with more than one value is ambiguous", "tensor-truth-value"),
    # torch words a float size three ways: an element of the tuple, a whole argument, or an unpacked `*sizes`
    (None, r"must be tuple of ints, ?(but found element of type|but got|not) float|"
           r"'float' object cannot be interpreted as an integer", "float-head-dim"),
    ("AttributeError", r"cannot assign module before Module\.__init__\(\) call", "missing-super-init"),
    (None, r"modified by an inplace operation", "inplace-autograd"),
    (None, r"Can't call numpy\(\) on Tensor that requires grad|does not require grad and does not have a grad_fn|"
           r"element \d+ of tensors does not require grad", "broken-grad"),
    (None, r"cannot be converted to type (at|c10)::(Half|BFloat16) without overflow", "mask-value-overflow"),
    (None, NO_CUDA.pattern, "hardcoded-device"),
]


# an assert comparing the length with the bound for equality: `assert T == self.max_seq_len`
FIXED_LENGTH = re.compile(r"(==|!=).*\b\w*(max_seq_len|max_len|block_size|context_length)\b|"
                          r"\b\w*(max_seq_len|max_len|block_size|context_length)\b.*(==|!=)")


def from_error(error: dict, static: dict, *, max_seq_len: int | None = None) -> list[str]:
    """Mistake ids that explain an exception reported by a probe (possibly none)."""
    kind, message = error.get("type", ""), error.get("message", "")
    if kind in ("timeout", "memory-limit", "exited", "crashed", "tampering", "submission-too-costly"):
        message = kind
    for rule_type, pattern, mistake in ERROR_RULES:
        if (rule_type is None or rule_type == kind) and re.search(pattern, message, re.I):
            return [mistake]
    if kind == "AssertionError" and FIXED_LENGTH.search(((error.get("where") or {}).get("text") or "")[:1000]):
        return ["fixed-length-assert"]
    if is_device_mismatch(error):
        return [device_mistake(static, error=error)]
    if is_softmax_over_a_size(error):
        return ["softmax-dim"]
    size = SIZE_MISMATCH.search(message)
    if size and max_seq_len is not None and str(max_seq_len) in size.groups():
        return ["mask-not-sliced"]
    if is_rank_error(error, static):
        return ["hardcoded-dims"]
    return []


def is_softmax_over_a_size(error: dict) -> bool:
    axis = NOT_AN_AXIS.search(error.get("message", "")[:DEVICE_MESSAGE_HEAD])
    where = error.get("where") or {}
    place = f"{where.get('text', '')} {where.get('function', '')}".lower()  # the call, or the student's own softmax
    return bool(axis) and abs(int(axis.group(1))) >= LARGEST_PROBED_RANK and "softmax" in place


def is_rank_error(error: dict, static: dict) -> bool:
    """A shape error from Part 1 code whose text assumes one input rank: raised on a line the static
    pass flagged, or anywhere in Part 1's function (a `transpose(1, 2)` fails at the matmul after it)."""
    places = static.get("hardcoded-dims")
    if not places or not RANK_ERROR.search(error.get("message", "")[:DEVICE_MESSAGE_HEAD]):
        return False
    where = error.get("where") or {}
    return not where or where.get("line") in {p["line"] for p in places} \
        or where.get("function") == GRADED_NAME["sdpa"]


def device_mistake(static: dict, plain_tensor_attributes: list[str] = (), error: dict | None = None,
                   made_by_a_call: list[str] = ()) -> str:
    """Which device mistake explains a device mismatch: the text tells the first three apart; the tensor that
    strayed, as the meta guard saw it, tells a CPU constant (one value: a scale, a fill) from a CPU mask. A plain tensor
    attribute made by a call before the move counts where the failing line names it (one kept for display,
    `self.attn = p_attn`, is no mask)."""
    if "layers-in-forward" in static:  # a layer built in forward is created on the CPU, whatever the module's device
        return "layers-in-forward"
    line = ((error or {}).get("where") or {}).get("text") or ""
    left_behind = [name for name in made_by_a_call if re.search(rf"\b{re.escape(name)}\b", line)]
    if plain_tensor_attributes or left_behind or "mask-not-buffer" in static:
        return "mask-not-buffer"
    if "hardcoded-device" in static:
        return "hardcoded-device"
    strays = stray_cpu_shapes((error or {}).get("message", ""))
    if strays and all(math.prod(shape) == 1 for shape in strays):
        return "constant-device"
    return "mask-device"


def stray_cpu_shapes(message: str) -> list[list[int]]:
    """The shapes of the CPU operands the meta guard (grader/sandbox/probes.py) names in its message; none from
    any other message."""
    head = message[:DEVICE_MESSAGE_HEAD]
    at = head.find(CPU_OPERAND_SHAPES)
    if at < 0:
        return []
    return [[int(size) for size in re.findall(r"\d+", shape)]
            for shape in re.findall(r"\[[\d, ]*\]", head[at + len(CPU_OPERAND_SHAPES):])]


def is_device_mismatch(error: dict, static: dict | None = None) -> bool:
    """A device finding: mixed devices; or, where the text moves tensors to a fixed device, a
    meta tensor copied out to a real one (on a GPU that copy is the mismatch)."""
    message = error.get("message", "")
    # torch says it in its first line; the pattern's two `.*` make a search cubic in the length
    # (0.7 s on an 8 k-character message a worker can send), so only the head is searched
    if DEVICE_MISMATCH.search(message[:DEVICE_MESSAGE_HEAD]):
        return True
    return bool(static and "hardcoded-device" in static and "Cannot copy out of meta tensor" in message)


def close(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> bool:
    """allclose in float64 where NaNs must sit in the same places (a NaN row is a symptom too)."""
    if actual is None or tuple(actual.shape) != tuple(expected.shape):
        return False
    return bool(torch.allclose(actual.double(), expected.double(), atol=atol, rtol=rtol, equal_nan=True))


def close_where_defined(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> bool:
    """close() on the rows (last axis) a wrong variant defines. A variant's one all-NaN row per matrix
    (mask-diagonal's first, which sees nothing) is no evidence either way: where the student's row is finite there
    (row 0 unmasked by hand as a band-aid), the other rows still name the bugs. Only one such row, and only with two
    rows left to compare: a variant whose NaN spreads over most rows leaves too little to name anything by; and only
    where the student's numbers are finite throughout (a band-aid leaves no NaN; NaN of its own is another finding)."""
    return _Observed(actual).close_where_defined(expected, atol, rtol)


class _Observed:
    """The student's numbers, read once for comparing with many variants (a search compares thousands)."""

    def __init__(self, actual: torch.Tensor | None) -> None:
        self.shape = None if actual is None else tuple(actual.shape)
        self.finite = actual is not None and actual.dim() >= 2 and bool(torch.isfinite(actual).all())
        self.double = None if actual is None else actual.double()  # close() then converts nothing again

    def close_where_defined(self, expected: torch.Tensor, atol: float, rtol: float) -> bool:
        if not self.finite or self.shape != tuple(expected.shape):
            return close(self.double, expected, atol, rtol)
        patched = torch.isnan(expected).all(-1)  # (..., rows): the student's rows are all finite
        if not bool(patched.any()):
            return close(self.double, expected, atol, rtol)
        if self.shape[-2] < 3 or bool((patched.sum(-1) > 1).any()):
            return False
        defined = ~patched.unsqueeze(-1).expand_as(expected)
        return close(self.double[defined], expected[defined], atol, rtol)


def matching_variant(actual: torch.Tensor, variants: dict[str, torch.Tensor], atol: float = 1e-3,
                     rtol: float = 1e-3) -> str | None:
    """The first wrong variant whose numbers the student's reproduce."""
    observed = _Observed(actual)
    for mistake, expected in variants.items():
        if observed.close_where_defined(expected, atol, rtol):
            return mistake
    return None


def matching_combination(actual: torch.Tensor, compute, combinations: list[tuple[str, ...]], atol: float = 1e-3,
                         rtol: float = 1e-3) -> tuple[str, ...] | None:
    """The first combination of wrong variants (`compute(combination)` -> its numbers) the student's reproduce:
    several bugs in one function, each named because together they explain every number."""
    observed = _Observed(actual)
    for combination in combinations:
        if observed.close_where_defined(compute(combination), atol, rtol):
            return combination
    return None
