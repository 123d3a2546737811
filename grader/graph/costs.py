"""What one node of a graph costs the CPU that runs it, estimated from shapes alone before it runs.

A product costs its output's elements times the length it contracts (an einsum, its whole index space); any other
operator, the elements it reads or writes, times the passes its class costs per element (a transcendental, a
special function, a series in complex arithmetic). Each is weighted by what its dtype costs this CPU, in float32
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

TRANSCENDENTAL = frozenset({
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sigmoid", "logit", "tanh", "sinh", "cosh", "asinh",
    "acosh", "atanh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "erf", "erfc", "erfinv", "pow",
    "float_power", "_softmax", "_log_softmax", "softplus", "gelu", "silu", "mish", "elu", "log_sigmoid_forward",
    "hypot", "logaddexp", "logaddexp2", "xlogy", "sinc"})
"""Elementwise operators that evaluate a series per element: up to 26 times an add on this CPU in float32 (tanh,
atan, pow; benchmarks/element_op_costs.py), so weighted TRANSCENDENTAL_WEIGHT times an element touched."""
TRANSCENDENTAL_WEIGHT = 32
SPECIAL = frozenset({"lgamma", "digamma", "polygamma", "mvlgamma", "igamma", "igammac", "i0", "special_i0e",
                     "special_i1", "special_i1e", "special_ndtri", "special_zeta", "special_bessel_j0",
                     "special_bessel_j1", "special_modified_bessel_i0", "special_modified_bessel_k0"})
"""Special functions: up to 186 times an add (digamma), so weighted SPECIAL_WEIGHT times."""
SPECIAL_WEIGHT = 256
COMPLEX_SERIES = TRANSCENDENTAL | SPECIAL | {"sqrt", "rsqrt", "reciprocal", "div", "sgn", "angle", "abs"}
"""On complex operands these run their series (or a division) in complex arithmetic: up to 1248 times a float32
add (complex64 pow), 312 times the complex64 dtype's own weight, so weighted COMPLEX_SERIES_WEIGHT times."""
COMPLEX_SERIES_WEIGHT = 320


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
    return weight * TOUCHED_WEIGHT * touched * _series_weight(packet.rstrip("_"), operands)


def _series_weight(name: str, operands: list[torch.Tensor]) -> int:
    """How many elementwise passes the operator costs per element (its class: transcendental, special, complex)."""
    if name in COMPLEX_SERIES and any(t.is_complex() for t in operands):
        return COMPLEX_SERIES_WEIGHT
    if name in SPECIAL:
        return SPECIAL_WEIGHT
    return TRANSCENDENTAL_WEIGHT if name in TRANSCENDENTAL else 1


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
