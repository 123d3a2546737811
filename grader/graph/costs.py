"""What one node of a graph costs the CPU that runs it, estimated from shapes alone before it runs.

A product costs its output's elements times the length it contracts (an einsum, its whole index space); any other
operator, the elements it reads or writes. Each is weighted by what its dtype costs this CPU, in float32
multiply-adds: `grader.graph.run` holds a graph's sum, and `grader.handin.parent_budget` a hand-in's, to a budget.
"""
from __future__ import annotations

import math

import torch

PRODUCTS = frozenset({"mm", "bmm", "matmul", "linear", "mv", "dot", "addmm", "baddbmm", "addbmm"})
"""Products whose contracted length is the last dim of their first matrix operand."""

DTYPE_WEIGHT = {torch.float32: 1, torch.bfloat16: 1, torch.float64: 2, torch.complex64: 4, torch.complex128: 8,
                torch.float16: 32}
"""A multiply-add in each dtype, in float32 multiply-adds, on the CPU the parent runs on (float16 has no fast CPU
kernel); a dtype not named (integers, bool) weighs 4."""

TOUCHED_WEIGHT = 16
"""An element an operator reads or writes, in float32 multiply-adds (an elementwise pass costs about that much)."""


def tensors(values) -> list[torch.Tensor]:
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += tensors(value)
        elif isinstance(value, dict):
            found += tensors(value.values())
    return found


def cost(packet: str, args: list, kwargs: dict, made: list) -> float:
    """The node's cost in float32 multiply-adds: a product's output elements times its contracted length (an
    einsum's whole index space), any other operator's elements read or written; weighted by its dtypes."""
    operands = tensors([*args, *kwargs.values()])
    results = [math.prod(m.shape) for m in made if m is not None]
    weight = max((DTYPE_WEIGHT.get(t.dtype, 4) for t in operands), default=1)
    touched = max([t.numel() for t in operands] + results + [1])
    out = max(results + [1])
    if packet in PRODUCTS:
        first = args[1] if packet in ("addmm", "baddbmm", "addbmm") else args[0]
        batch = first.shape[0] if packet == "addbmm" and first.dim() == 3 else 1
        return weight * (out * (first.shape[-1] if first.dim() else 1) * batch + touched)
    if packet == "einsum" and len(args) > 1:
        return weight * (_einsum_space(args[0], args[1]) + touched)
    if packet == "tensordot" and len(operands) >= 2:
        contracted = math.isqrt(operands[0].numel() * operands[1].numel() // out) if out else 0
        return weight * (out * contracted + touched)
    return weight * TOUCHED_WEIGHT * touched


def _einsum_space(equation, operands) -> int:
    """The number of index combinations an einsum visits: every letter's size (and the broadcast dims of `...`)
    multiplied; what cannot be read that way counts as every operand's elements multiplied (an upper bound)."""
    given = [t for t in operands if isinstance(t, torch.Tensor)] if isinstance(operands, (list, tuple)) else []
    fallback = math.prod(max(t.numel(), 1) for t in given)
    if type(equation) is not str or len(given) != len(equation.split("->")[0].split(",")):
        return fallback
    sizes: dict[str, int] = {}
    ellipsis: list[int] = []
    for term, tensor in zip(equation.split("->")[0].replace(" ", "").split(","), given):
        letters = term.replace("...", "")
        spread = tensor.dim() - len(letters)
        if spread < 0 or ("..." not in term and spread):
            return fallback
        before = term.split("...")[0] if "..." in term else letters
        dims = list(tensor.shape)
        for position, letter in enumerate(letters):
            size = dims[position] if position < len(before) else dims[position + spread]
            sizes[letter] = max(sizes.get(letter, 1), size)
        spread_sizes = dims[len(before):len(before) + spread] if "..." in term else []
        width = max(len(ellipsis), len(spread_sizes))
        ellipsis = [max(a, b) for a, b in zip([1] * (width - len(ellipsis)) + ellipsis,
                                               [1] * (width - len(spread_sizes)) + spread_sizes)]
    return math.prod(sizes.values()) * math.prod(ellipsis)
