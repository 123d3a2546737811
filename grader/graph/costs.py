"""What one node of a graph costs the CPU that runs it, estimated from shapes alone before it runs.

A product costs its output's elements times the length it contracts (an einsum, its whole index space); an operator
whose work grows faster than the elements it reads or writes, its work (`_superlinear`: a window slid over its input,
a convolution, a distance matrix, a recurrent layer, a bag of embeddings, a decomposition of matrices); any other
operator, the elements it reads or writes, times the passes its class costs per element (a transcendental, a
special function, a series in complex arithmetic). Each is weighted by what its dtype costs this CPU, in float32
multiply-adds: `grader.graph.run` holds a graph's sum, and `grader.handin.parent_budget` a hand-in's, to a budget.
"""
from __future__ import annotations

import functools
import math
import re

import torch

PRODUCTS = frozenset({"mm", "bmm", "matmul", "linear", "mv", "dot", "addmm", "baddbmm", "addbmm", "linalg_matmul",
                      "inner", "_weight_int8pack_mm", "_weight_int4pack_mm", "_weight_int4pack_mm_for_cpu",
                      "_weight_int4pack_mm_with_scales_and_zeros", "fbgemm_linear_fp16_weight",
                      "fbgemm_linear_fp16_weight_fp32_activation", "fbgemm_linear_int8_weight",
                      "fbgemm_linear_int8_weight_fp32_activation"})
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
        kind = type(value)
        if kind is int or kind is float or kind is bool or value is None:  # sizes and scalars: most arguments
            continue
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found += tensors(value)
        elif isinstance(value, dict):
            found += tensors(value.values())
    return found


def cost(packet: str, args: list, kwargs: dict, made: list) -> float:
    """The node's cost in float32 multiply-adds: a product's output elements times its contracted length (an
    einsum's whole index space), an operator whose work outgrows its elements its work, as elements touched; any
    other operator's elements read or written; weighted by its dtypes."""
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
    work = _superlinear(packet, args, kwargs, operands, out)
    if work is not None:
        return weight * TOUCHED_WEIGHT * (work + touched)
    if packet == "tensordot" and len(operands) >= 2:
        contracted = math.isqrt(operands[0].numel() * operands[1].numel() // out) if out else 0
        return weight * (out * contracted + touched)
    return weight * TOUCHED_WEIGHT * touched * _series_weight(packet.rstrip("_"), operands)


DECOMPOSITION = re.compile(r"linalg_(?!vector_norm|vecdot|cross|diagonal|vander|_powsum)|cholesky|svd|^qr$|"
                           r"^_?det$|^(cholesky_|p)?inverse$|(^|_)lu($|_)|(^|_)eig|(^|_)solve|lstsq|slogdet|logdet|"
                           r"matrix_exp|matrix_power|orgqr|ormqr|geqrf|householder|chain_matmul")
"""Operators of linear algebra that factor, invert or chain matrices: about n**3 per n x n matrix, where their
operands hold n**2 elements (the linalg norms and products that may run an SVD are counted here too)."""
DECOMPOSITION_PASSES = 4
"""A factorisation's n**3 steps, each weighed as an element touched: an SVD takes 1.1 times a float32 add per step
of 2 n**3, an inverse 0.4 times (benchmarks/element_op_costs.py), so 4 n**3 holds them."""
WINDOW_WEIGHT = 4
"""A window's element, weighed as an element touched: avg_pool2d takes 3.5 times a float32 add per output and window
element, max_pool1d 0.5 times (benchmarks/element_op_costs.py); a convolution's or a distance's multiply-add 0.2
times, so it weighs one."""
MATRIX_EXP_PRODUCTS = 160
"""Products of n x n matrices a matrix exponential may make: its Pade or Taylor terms, then up to one squaring per
binary order of the matrix's norm (float32's range: about 128)."""


def _superlinear(packet: str, args: list, kwargs: dict, operands: list[torch.Tensor], out: int) -> int | None:
    """The work of an operator that does more than a pass over the elements it reads or writes, in elements touched
    (each weighed as an elementwise pass); None for the others. Each is an upper bound read from shapes and
    arguments alone."""
    name = packet.rstrip("_")
    first = operands[0] if operands else None
    if first is None or not _superlinear_by_name(name):
        return None
    if "pool" in name and "unpool" not in name:  # each output element reads its window
        return WINDOW_WEIGHT * out * _window(name, args, kwargs, first)
    if re.search(r"conv(?!ert)", name) and len(operands) >= 2:  # per output: in-channels/groups x kernel products
        weight = operands[1]
        per_output = weight.numel() // max(weight.shape[-1] if name == "conv_tbc" else weight.shape[0], 1)
        return max(out, first.numel()) * per_output  # a transposed convolution: each input element spreads as far
    if name in ("cdist", "_cdist_forward", "pdist", "_pdist_forward"):  # a distance per pair over the feature dim
        return out * (first.shape[-1] if first.dim() else 1)
    if name == "bilinear" and len(operands) >= 3:  # out x in1 x in2 per sample
        return out * (operands[2].numel() // max(operands[2].shape[0], 1))
    if name == "_trilinear":
        return out * _summed_space(args, operands)
    if name.endswith("_cell") or "rnn" in name or "lstm" in name or "gru" in name:  # every row through every weight
        rows = first.numel() // max(first.shape[-1] if first.dim() else 1, 1)
        return rows * sum(t.numel() for t in operands[1:])
    if "embedding_bag" in name and len(operands) >= 2:  # each index adds one row of the table
        return operands[1].numel() * (first.shape[-1] if first.dim() else 1)
    if name == "ctc_loss" and len(operands) >= 2:  # every time step of every sample over the extended targets
        return first.numel() // max(first.shape[-1] if first.dim() else 1, 1) * (2 * operands[1].numel() + 1)
    if DECOMPOSITION.search(name):
        return _cubic(name, args, kwargs, operands)
    return None


@functools.lru_cache(maxsize=1024)
def _superlinear_by_name(name: str) -> bool:
    """Whether an operator's name is one `_superlinear` prices by its work (read once per name): the same tests
    as its branches, without their operands."""
    return ("pool" in name and "unpool" not in name) or re.search(r"conv(?!ert)", name) is not None or name in (
        "cdist", "_cdist_forward", "pdist", "_pdist_forward", "bilinear", "_trilinear", "ctc_loss") or \
        name.endswith("_cell") or "rnn" in name or "lstm" in name or "gru" in name or "embedding_bag" in name or \
        DECOMPOSITION.search(name) is not None


def _argument(args: list, kwargs: dict, position: int, name: str):
    return kwargs[name] if name in kwargs else args[position] if len(args) > position else None


def _window(name: str, args: list, kwargs: dict, source: torch.Tensor) -> int:
    """The elements one output of a pooling reads: its kernel (one size stands for every spatial dim), or for an
    adaptive pooling the widest window its output size gives (input size over output size, plus one, per dim); the
    whole input where the arguments cannot be read."""
    spatial = int(next((c for c in name if c.isdigit()), "1"))
    if name.startswith(("adaptive", "_adaptive")):
        sizes = _argument(args, kwargs, 1, "output_size")
        sizes = [sizes] * spatial if isinstance(sizes, int) else sizes
        if isinstance(sizes, (list, tuple)) and len(sizes) == spatial and source.dim() >= spatial and \
                all(isinstance(s, int) and s > 0 for s in sizes):
            return math.prod(-(-n // s) + 1 for n, s in zip(source.shape[-spatial:], sizes))
        return source.numel()
    kernel = _argument(args, kwargs, 1, "kernel_size")
    kernel = [kernel] if isinstance(kernel, int) else kernel
    if isinstance(kernel, (list, tuple)) and kernel and all(isinstance(k, int) and k >= 0 for k in kernel):
        return math.prod(kernel) ** (spatial if len(kernel) == 1 else 1)
    return source.numel()


def _summed_space(args: list, operands: list[torch.Tensor]) -> int:
    """What `_trilinear` sums over per output element: the sizes of its summed dims, the largest operand's at each;
    every operand's elements multiplied where they cannot be read."""
    summed = args[6] if len(args) > 6 else None
    if isinstance(summed, (list, tuple)) and all(isinstance(d, int) for d in summed) and \
            len({t.dim() for t in operands[:3]}) == 1:
        rank = operands[0].dim()
        if all(-rank <= d < rank for d in summed):
            return math.prod(max(t.shape[d] for t in operands[:3]) for d in summed)
    return math.prod(max(t.numel(), 1) for t in operands)


def _cubic(name: str, args: list, kwargs: dict, operands: list[torch.Tensor]) -> int:
    """A decomposition's work: for each batch of matrices, n**3 per matrix (n its larger side), times the products a
    matrix power or exponential makes; a chain of products, one n**3 per matrix at the chain's largest side."""
    matrices = [t for t in operands if t.dim() >= 2]
    if not matrices:
        return 0
    if name in ("chain_matmul", "linalg_multi_dot"):
        side = max(max(t.shape[-2:]) for t in matrices)
        return len(matrices) * side ** 3  # each product one n**3
    products = DECOMPOSITION_PASSES
    if "matrix_power" in name:
        exponent = _argument(args, kwargs, 1, "n")
        products = 2 * max(abs(exponent).bit_length(), 1) if isinstance(exponent, int) else MATRIX_EXP_PRODUCTS
    elif "matrix_exp" in name:
        products = MATRIX_EXP_PRODUCTS
    return products * sum(t.numel() // (t.shape[-1] * t.shape[-2] or 1) * max(t.shape[-2:]) ** 3 for t in matrices)


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
