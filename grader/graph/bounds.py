"""What one node of a graph will allocate, view and cost, known before it runs.

Each node runs first on the meta device, on tensors that mirror its real arguments (shape, strides, offset, the
size of the storage under them, dtype): torch's meta kernels compute a result's shape, strides and storage for
nearly every aten operator without touching memory. The node runs for real only when every tensor it would
make holds at most `MAX_ELEMENTS` elements, over a storage of at most that many, and every view it would make
lies inside the storage it views: operators that take strides from the caller (`as_strided`, `_reshape_alias`,
`empty_strided`, ...) go through this one check and none other. An operator without a meta kernel is refused as
unbounded, except the few whose result size depends on values and has a rule here (`DATA_DEPENDENT`).

Most nodes of honest graphs need no meta run, and torch's Python meta kernels cost a hundred microseconds a call
(and a second of imports at the first): what torch itself tags `pointwise` makes the broadcast of its tensors, what
it tags `inplace` (and not `inplace_view`) returns its own first tensor, and a few operators have their result's
shape by definition (`SHAPE_OF_FIRST`, `MATRIX_PRODUCTS`); these are shaped by that rule, the rest on meta.

Each node's cost (`costs.cost`) comes from the same shapes. The plan of a node depends only on its target and its
arguments' shapes, strides and dtypes, so a meta run's plan is kept per signature: an honest grading runs a few
hundred distinct nodes thousands of times.
"""
from __future__ import annotations

import dataclasses
import functools
import math

import torch

from grader.graph import costs
from grader.graph.costs import DTYPE_WEIGHT, TOUCHED_WEIGHT
from grader.graph.decode import GraphRefused

MAX_ELEMENTS = 1 << 26  # in any one tensor the graph makes, and in the storage under it (256 MiB of float32)

DATA_DEPENDENT = frozenset({"_local_scalar_dense", "item", "equal", "allclose", "is_nonzero", "masked_select"})
"""A Python number or a result sized by values, without a meta kernel: each makes at most the broadcast of its
inputs (`allclose` compares them elementwise first). Indexing by a boolean mask and `repeat_interleave` by a tensor
of counts run on meta with a stand-in that is as large as their result can be (`_meta_arguments`)."""

BOUNDED_BY_VALUES = DATA_DEPENDENT | {"index", "_unsafe_index", "repeat_interleave"}
"""The operators sized by values (torch tags them `dynamic_output_shape`, `data_dependent_output`) a rule here bounds."""

SHAPE_OF_FIRST = {"triu": 1, "tril": 1, "_softmax": 1, "_log_softmax": 1, "softmax": 1, "log_softmax": 1,
                  "_softmax_backward_data": 1, "_log_softmax_backward_data": 1, "cumsum": 1, "native_dropout": 2}
"""Operators whose results (this many) each have the shape of their first tensor, in a storage of their own."""

MATRIX_PRODUCTS = {"mm": (0, 2), "bmm": (0, 3), "addmm": (1, 2), "baddbmm": (1, 3)}
"""Products by their matrices' position and rank: (m, k) @ (k, n) makes (m, n), batched (b, m, k) @ (b, k, n)."""

@dataclasses.dataclass(frozen=True)
class Made:
    """One tensor a node would return: its shape, and where it lies in its storage."""
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    storage_bytes: int
    itemsize: int
    new_storage: bool  # not a view of an argument's storage: allocated by the node


@dataclasses.dataclass(frozen=True)
class Plan:
    made: tuple[Made | None, ...]  # per result (None: not a tensor); empty where values decide (DATA_DEPENDENT)
    cost: float  # float32 multiply-adds
    allocated_bytes: int


def _refuse_size(target: str, elements: int):
    raise GraphRefused(f"{target} would make a tensor of {elements} elements, above {MAX_ELEMENTS}")


def reach(shape, stride, offset: int) -> tuple[int, int]:
    """The lowest and highest storage element a tensor of this shape, strides and offset reads (empty: offset)."""
    low = high = offset
    for size, step in zip(shape, stride):
        if size == 0:
            return offset, offset
        if step > 0:
            high += (size - 1) * step
        else:
            low += (size - 1) * step
    return low, high


def check_made(target: str, made: Made) -> None:
    """A tensor within the element bound whose every element lies inside its storage, which is within it too."""
    elements = math.prod(made.shape)
    if elements > MAX_ELEMENTS:
        _refuse_size(target, elements)
    storage_elements = made.storage_bytes // max(made.itemsize, 1)
    if made.new_storage and storage_elements > MAX_ELEMENTS:
        _refuse_size(target, storage_elements)
    low, high = reach(made.shape, made.stride, made.offset)
    if elements and (low < 0 or high >= storage_elements):
        raise GraphRefused(f"{target} would make a view reaching storage elements {low} to {high} of a storage of "
                           f"{storage_elements}")


def described(tensor: torch.Tensor, new_storage: bool) -> Made:
    return Made(tuple(tensor.shape), tuple(tensor.stride()), tensor.storage_offset(),
                tensor.untyped_storage().nbytes(), tensor.element_size(), new_storage)


def _mirror(tensor: torch.Tensor) -> torch.Tensor:
    """A meta tensor with the real one's shape, strides, offset, dtype and storage size."""
    storage = torch.UntypedStorage(tensor.untyped_storage().nbytes(), device="meta")
    return torch.empty(0, dtype=tensor.dtype, device="meta").set_(storage, tensor.storage_offset(), tensor.shape,
                                                                  tensor.stride())


def _on_meta(value):
    if isinstance(value, torch.Tensor):
        return _mirror(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_on_meta(v) for v in value)
    if isinstance(value, torch.device):
        return torch.device("meta")
    return value


def _meta_arguments(packet: str, args: list, kwargs: dict) -> tuple[list, dict]:
    """The arguments on meta; a boolean mask index stands as one index per dim it covers, each as long as the mask
    has elements (the most it can select), and a tensor of repeat counts brings their sum."""
    meta_args, meta_kwargs = _on_meta(list(args)), {key: _on_meta(v) for key, v in kwargs.items()}
    if packet in ("index", "_unsafe_index") and len(args) > 1 and isinstance(args[1], (list, tuple)):
        indices = []
        for index in args[1]:
            if isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8):
                indices += [torch.empty(index.numel(), dtype=torch.long, device="meta")] * max(index.dim(), 1)
            else:
                indices.append(_on_meta(index))
        meta_args[1] = indices
    if packet == "repeat_interleave":
        counts = next((a for a in args if isinstance(a, torch.Tensor) and not a.is_floating_point()
                       and a is not args[0] or (len(args) == 1 and a is args[0])), None)
        if counts is not None and counts.numel() <= MAX_ELEMENTS:
            total = _repeat_total(counts)
            if kwargs.get("output_size") not in (None, total):
                raise GraphRefused(f"repeat_interleave told an output size of {kwargs['output_size']}, not {total}")
            meta_kwargs["output_size"] = total
    return meta_args, meta_kwargs


def _repeat_total(counts: torch.Tensor) -> int:
    """The output size of repeat_interleave by `counts`, refused when a count is negative or the total is above
    MAX_ELEMENTS. torch's own int64 sum wraps (four counts of 2**62 sum to 0): meta would plan an empty result
    and the real kernel write past it. Each count is capped just above the bound first, so the sum of at most
    MAX_ELEMENTS of them is exact in int64."""
    counts = counts.to(torch.int64)
    if counts.numel() and bool((counts < 0).any()):
        raise GraphRefused("repeat_interleave by a negative count")
    total = int(counts.clamp(max=MAX_ELEMENTS + 1).sum()) if counts.numel() else 0
    if total > MAX_ELEMENTS:
        raise GraphRefused(f"repeat_interleave by counts that total more than {MAX_ELEMENTS} elements")
    return total


def zeros(shapes: list[tuple[list, torch.dtype]]) -> list[torch.Tensor]:
    """Zeros of the given shapes and dtypes (values that did not come: a constant or buffer made on a stand-in),
    each within `MAX_ELEMENTS` and all together too, checked before any is allocated; a shape that is no list of
    sizes is refused."""
    total = 0
    for shape, _ in shapes:
        if not (isinstance(shape, list) and len(shape) <= 8 and all(type(n) is int and n >= 0 for n in shape)):
            raise GraphRefused("a tensor without values described by no shape")
        total += math.prod(shape)
        if math.prod(shape) > MAX_ELEMENTS or total > MAX_ELEMENTS:
            _refuse_size("a tensor without values", max(math.prod(shape), total))
    return [torch.zeros(shape, dtype=dtype) for shape, dtype in shapes]


def check_arguments(target: str, args: list, kwargs: dict) -> None:
    """What an operator whose meta run raised may still allocate before it raises for real: no size it is given and
    no broadcast of its inputs over the bound."""
    values = [*args, *kwargs.values()]
    for value in values:
        if isinstance(value, (list, tuple)) and value and all(type(v) is int for v in value):
            if math.prod(max(v, 0) for v in value) > MAX_ELEMENTS:
                _refuse_size(target, math.prod(max(v, 0) for v in value))
    tensors = costs.tensors(values)
    if tensors and _broadcast_elements(tensors) > MAX_ELEMENTS:
        _refuse_size(target, _broadcast_elements(tensors))


def _storages(values) -> dict[int, int]:
    found: dict[int, int] = {}
    for value in values:
        if isinstance(value, torch.Tensor):
            found[value.untyped_storage()._cdata] = value.untyped_storage().nbytes()
        elif isinstance(value, (list, tuple)):
            found.update(_storages(value))
    return found


def _broadcast_elements(tensors: list[torch.Tensor]) -> int:
    return math.prod(_broadcast_shape(tensors)) if tensors else 1


def plan(target: str, packet: str, operator_, args: list, kwargs: dict) -> Plan:
    """The node's results, cost and new memory, from its meta run (or its rule); raises GraphRefused for a
    result over a bound or an operator whose result cannot be bounded, and re-raises what the meta run raised
    for an operator that would raise on these arguments."""
    tensors = costs.tensors([*args, *kwargs.values()])
    if packet in DATA_DEPENDENT:
        elements = _broadcast_elements(tensors) if tensors else 1
        if elements > MAX_ELEMENTS:
            _refuse_size(target, elements)
        weight = max((DTYPE_WEIGHT.get(t.dtype, 4) for t in tensors), default=1)
        return Plan((), TOUCHED_WEIGHT * weight * elements, elements * 16)
    by_rule = _by_rule(packet, operator_, args, tensors)
    if by_rule is not None:
        allocated = sum(m.storage_bytes for m in by_rule if m.new_storage)
        for made in by_rule:
            check_made(target, made)
        return Plan(by_rule, costs.cost(packet, args, kwargs, list(by_rule)), allocated)
    key = _signature(packet, args, kwargs)
    planned = (_planned(target, packet, operator_, key, args, kwargs) if key is not None
               else _plan_on_meta(target, packet, operator_, args, kwargs))
    for made in planned.made:
        if made is not None:
            check_made(target, made)
    return _sized_by_a_mask(packet, args, planned)


def _sized_by_a_mask(packet: str, args: list, planned: Plan) -> Plan:
    """An index by a boolean mask was planned (and charged) at the most it can select; its real result is as long
    as the mask has True values, so it is held to that bound, as the DATA_DEPENDENT operators are, not to the
    planned shape (honest `scores[..., future]` is no forged graph)."""
    if packet in ("index", "_unsafe_index") and len(args) > 1 and isinstance(args[1], (list, tuple)) and any(
            isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8) for index in args[1]):
        return Plan((), planned.cost, planned.allocated_bytes)
    return planned


def _by_rule(packet: str, operator_, args: list, tensors: list[torch.Tensor]) -> tuple[Made, ...] | None:
    """The results by torch's own tags or by definition (module docstring); None where meta must tell."""
    rule = _rule(packet, operator_)
    if rule is None or not tensors or not isinstance(args[0] if args else None, (torch.Tensor, int, float, bool)):
        return None
    if rule == "inplace" and isinstance(args[0], torch.Tensor):
        return (described(args[0], False),)
    itemsize = max(max(t.element_size() for t in tensors), 4)
    if rule == "pointwise":
        return (_fresh(_broadcast_shape(tensors), itemsize),)
    if packet in SHAPE_OF_FIRST:
        return (_fresh(tuple(tensors[0].shape), itemsize),) * SHAPE_OF_FIRST[packet]
    if packet in MATRIX_PRODUCTS:
        first, rank = MATRIX_PRODUCTS[packet]
        matrices = [a for a in args[first:first + 2] if isinstance(a, torch.Tensor) and a.dim() == rank]
        if len(matrices) == 2:
            return (_fresh((*matrices[0].shape[:-1], matrices[1].shape[-1]), itemsize),)
    return None


@functools.lru_cache(maxsize=4096)
def _rule(packet: str, operator_) -> str | None:
    tags = operator_.tags
    if torch.Tag.inplace in tags and torch.Tag.inplace_view not in tags:
        return "inplace"
    if torch.Tag.pointwise in tags:
        return "pointwise"
    return "by definition" if packet in SHAPE_OF_FIRST or packet in MATRIX_PRODUCTS else None


def _fresh(shape: tuple[int, ...], itemsize: int) -> Made:
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= max(size, 1)
    return Made(tuple(shape), tuple(strides), 0, math.prod(shape) * itemsize, itemsize, True)


def _broadcast_shape(tensors: list[torch.Tensor]) -> tuple[int, ...]:
    rank = max(t.dim() for t in tensors)
    padded = [(1,) * (rank - t.dim()) + tuple(t.shape) for t in tensors]
    return tuple(max(sizes) if 0 not in sizes else 0 for sizes in zip(*padded))


def _planned(target, packet, operator_, key, args, kwargs) -> Plan:
    known = _PLANS.get((target, key))
    if known is None:
        try:
            known = _plan_on_meta(target, packet, operator_, args, kwargs)
        except GraphRefused as refused:
            known = refused
        except Exception as error:  # the operator refuses these arguments: it raises for real too
            known = error
        if len(_PLANS) >= _PLANS_KEPT:
            _PLANS.clear()
        _PLANS[(target, key)] = known
    if isinstance(known, BaseException):
        raise known
    return known


_PLANS: dict = {}
_PLANS_KEPT = 4096


def _plan_on_meta(target: str, packet: str, operator_, args: list, kwargs: dict) -> Plan:
    meta_args, meta_kwargs = _meta_arguments(packet, args, kwargs)
    given = _storages([*meta_args, *meta_kwargs.values()])  # each argument's storage and its size before the run
    try:
        result = operator_(*meta_args, **meta_kwargs)
    except NotImplementedError:
        raise GraphRefused(f"{target} cannot be bounded before it runs (torch has no meta kernel for it)") from None
    made, allocated = [], 0
    for value in result if isinstance(result, (list, tuple)) else (result,):
        if isinstance(value, torch.Tensor):
            nbytes, before = value.untyped_storage().nbytes(), given.get(value.untyped_storage()._cdata)
            # a storage of its own, or an argument's it grew (`resize_`): held to the bound, its new bytes charged
            made.append(described(value, before is None or nbytes > before))
            allocated += nbytes if before is None else max(nbytes - before, 0)
        else:
            made.append(None)
    return Plan(tuple(made), costs.cost(packet, args, kwargs, made), allocated)


def _signature(packet: str, args: list, kwargs: dict):
    """What a node's plan depends on (no value, except a repeat count's), hashable; None where values matter."""
    if packet == "repeat_interleave":
        return None
    try:
        key = (_key(args), _key(sorted(kwargs.items())))
        hash(key)
        return key
    except TypeError:
        return None


def _key(value):
    kind = type(value)
    if kind is int or kind is bool or kind is str or value is None:  # sizes and dims, most of a key
        return kind, value
    if isinstance(value, torch.Tensor):
        return (value.dtype, tuple(value.shape), value.stride(), value.storage_offset(),
                value.untyped_storage().nbytes())
    if isinstance(value, (list, tuple)):
        return (kind.__name__, *[(int, v) if type(v) is int else _key(v) for v in value])
    if type(value) is float and value != value:
        return "nan"
    return type(value), value  # 2, 2.0 and True are equal keys, and may give results of other dtypes

