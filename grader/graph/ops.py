"""Which operators a graph from a worker may hold: a rule on what torch says of each operator, never a list of names.

An aten operator is run when its behaviour can be bounded before it runs:
- its results' shapes, strides and storage come from a meta kernel (`bounds.plan`), or, for the few whose size
  depends on values (torch tags them `dynamic_output_shape` or `data_dependent_output`), from a rule of `bounds`;
  every view it makes is held inside its storage there, so strides of the caller's choosing are checked too (an
  operator that takes them for a copy or a scatter, whose result is no view, is refused);
- it writes into no argument but its own tensor (no `out=`), and every tensor it touches is the graph's own (the
  run's inputs and constants are copies);
- it returns something (an operator that returns nothing exists for its effects: printing, asserting);
- it takes no storage, stream or object of the interpreter, only tensors, numbers, strings and torch's enums, and
  makes no tensor from a string alone (`from_file` reads a file);
- it is deterministic, or it draws random numbers (torch's `nondeterministic_seeded` tag) from a generator the
  parent passes: its own `generator` argument, the overload of its packet that takes one, or the draw `run._random`
  makes as the operator does (`DRAWN_HERE`).
Everything else is refused as `unsupported-op`: the operator is fine, the grader cannot bound it.

The built-in attention is refused as `forbidden-api` by what its kernels take and do, not by their names
(`attention_kernel`): an operator that takes a query, a key and a value, or a number of heads, or a mask with the
dim it normalises along (a masked softmax), or a softmax that gives a row masked throughout zero weight where a
softmax gives NaN (the math path's `_safe_softmax`, told by running it on such a row).
"""
from __future__ import annotations

import functools
import math

import torch

SPECIAL = frozenset({"getitem"})
"""One element of an operator's list of results (`max.dim`, `native_dropout`, `split`), run by the parent's own code."""

DRAWN_HERE = frozenset({"rand_like", "randn_like", "native_dropout"})
"""Random operators without a generator argument that `run._random` draws as the operator does."""
NOT_COUNTED = frozenset({"detach", "alias", "clone", "view", "_unsafe_view", "_reshape_alias", "expand", "lift_fresh"})
"""Not counted by the loop check: how many of these one call dispatches depends on its inputs' layout (a view of a
non-contiguous tensor becomes clone + _unsafe_view) and on autograd (each output saved for the backward is detached),
not on the code; they compute nothing, so no loop hides in them alone."""

UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"})
"""Operators whose values are whatever the parent's memory held: run here, their whole storage is filled with zeros
(the gaps between strides too, which `as_strided` could read), so no byte of the parent's memory reaches a report.
Storage an operator grows (`resize_`) is zeroed by `run._call` past its old end."""

ATTENTION_OPERANDS = ({"query", "key", "value"}, {"q", "k", "v"})
HEAD_COUNTS = frozenset({"num_head", "num_heads"})
ARGUMENT_KINDS = frozenset({"Tensor", "Int", "SymInt", "Float", "Bool", "Number", "Complex", "String", "DeviceObj",
                            "Generator"})
"""Argument types an operator may take, lists and optionals of them too (a dtype, layout or memory format is an int
to the schema): no storage, stream, dict, tuple, class, future or any type of the interpreter."""
META_KEYS = ("Meta", "CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
"""A kernel under one of these runs on the meta device (the composites decompose into operators that do)."""
VALUE_SIZED_TAGS = (torch.Tag.dynamic_output_shape, torch.Tag.data_dependent_output)


def resolve(target: str):
    """The aten OpOverload a target names, or None."""
    namespace, _, rest = target.partition(".")
    packet, _, overload = rest.partition(".")
    if namespace != "aten" or not packet or not overload or "." in overload:
        return None
    try:
        return getattr(getattr(torch.ops.aten, packet), overload)
    except (AttributeError, RuntimeError):
        return None


@functools.lru_cache(maxsize=1024)
def packet(target: str) -> str:
    """The operator's name without its namespace and overload (`aten.empty.memory_format`: `empty`)."""
    return target.split(".")[1] if "." in target else target


@functools.lru_cache(maxsize=1024)
def draws_random(target: str) -> bool:
    """Whether the operator a target names draws random numbers (torch tags it `nondeterministic_seeded`)."""
    operator_ = resolve(target)
    return operator_ is not None and torch.Tag.nondeterministic_seeded in operator_.tags


def attention_kernel(operator_) -> bool:
    """The built-in attention, by what it takes and does."""
    names = {argument.name for argument in operator_._schema.arguments}
    if any(roles <= names for roles in ATTENTION_OPERANDS) or names & HEAD_COUNTS:
        return True
    if "mask" in names and "dim" in names:
        return True
    return _zeroes_masked_rows(operator_)


def _zeroes_masked_rows(operator_) -> bool:
    """A softmax of one tensor along one dim (a schema of a tensor, a dim, and defaults) that gives a row masked
    throughout zeros where softmax gives NaN: the built-in attention's math path and nothing a student writes."""
    arguments = operator_._schema.arguments
    if (len(arguments) < 2 or str(arguments[0].type) != "Tensor" or arguments[1].name != "dim"
            or str(arguments[1].type) != "int" or len(operator_._schema.returns) != 1
            or any(not a.has_default_value() and a.type.kind() != "OptionalType" for a in arguments[2:])):
        return False
    scores = torch.tensor([[-math.inf, -math.inf], [0.0, 0.0]])
    try:
        with torch.no_grad():
            weights = operator_(scores, -1)
    except Exception:
        return False
    return (isinstance(weights, torch.Tensor) and weights.shape == scores.shape
            and torch.equal(weights, torch.tensor([[0.0, 0.0], [0.5, 0.5]])))


def unbounded(operator_, packet: str) -> str | None:
    """Why the runner cannot bound this operator's behaviour, or None where it can."""
    from grader.graph import bounds  # here: bounds imports decode, which imports this module

    schema = operator_._schema
    if not schema.returns:
        return "it returns nothing (it exists for its effects)"
    for argument in schema.arguments:
        if argument.alias_info is not None and argument.alias_info.is_write and argument.name != "self":
            return f"it writes into an argument other than its own tensor ({argument.name})"
        if not _plain(argument.type):
            return f"it takes a {argument.type}"
    if "storage_offset" in {a.name for a in schema.arguments} and any(r.alias_info is None for r in schema.returns):
        return "it reads or writes at strides of the caller's choosing inside a result that is no view of them"
    if (any(_base(r.type) == "Tensor" for r in schema.returns)
            and not any(_base(a.type) == "Tensor" for a in schema.arguments)
            and any(_base(a.type) == "String" and not a.has_default_value() for a in schema.arguments)):
        return "it makes a tensor from a string it is given, not from tensors (it reads a file)"
    tags = operator_.tags
    if any(tag in tags for tag in VALUE_SIZED_TAGS) and packet not in bounds.BOUNDED_BY_VALUES:
        return "its result's size depends on values and no rule bounds it"
    try:
        on_meta = any(torch._C._dispatch_has_kernel_for_dispatch_key(operator_.name(), key) for key in META_KEYS)
    except RuntimeError:  # a builtin of TorchScript, not of the dispatcher
        return "the dispatcher has no such operator"
    if not on_meta and packet not in bounds.DATA_DEPENDENT:  # those are planned by their rule, not on meta
        return "torch has no meta kernel for it"
    if torch.Tag.nondeterministic_seeded in tags and drawing(operator_, packet) is None:
        return "it draws random numbers from no generator the grader can pass"
    return None


def _plain(kind) -> bool:
    return _base(kind) in ARGUMENT_KINDS


def _base(kind) -> str:
    """A schema type without its lists and optionals: "Tensor", "Int", "String", "Storage", ..."""
    while kind.kind() in ("OptionalType", "ListType"):
        kind = kind.getElementType()
    return kind.kind().removesuffix("Type")


@functools.lru_cache(maxsize=1024)
def drawing(operator_, packet: str):
    """For an operator torch tags random: the overload to call with the parent's generator (itself where it
    takes one, else its packet's overload with the same arguments and a generator), "here" where `run._random`
    draws as it does, None where neither."""
    names = [argument.name for argument in operator_._schema.arguments]
    if "generator" in names:
        return operator_
    if packet in DRAWN_HERE:
        return "here"
    packet_ = getattr(torch.ops.aten, packet)
    for overload in packet_.overloads():
        sibling = getattr(packet_, overload)
        if [a.name for a in sibling._schema.arguments if a.name != "generator"] == names and \
                "generator" in [a.name for a in sibling._schema.arguments]:
            return sibling
    return None


@functools.lru_cache(maxsize=4096)
def verdict(target: str) -> str:
    """"allowed", "forbidden" (the built-in attention) or "unsupported" for one node's target."""
    if target in SPECIAL:
        return "allowed"
    operator_ = resolve(target)
    if operator_ is None:
        return "unsupported"
    if attention_kernel(operator_):
        return "forbidden"
    return "unsupported" if unbounded(operator_, target.split(".")[1]) else "allowed"


def why_unsupported(target: str) -> str:
    """Why `verdict` does not allow a target, in words for the report."""
    operator_ = resolve(target)
    if operator_ is None:
        return "not an aten operator of this torch"
    if attention_kernel(operator_):
        return "the built-in attention"
    return unbounded(operator_, target.split(".")[1]) or "bounded"
