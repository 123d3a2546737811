"""Which operators a graph from a worker may hold: the one list the parent runs, and why the rest is not.

An operator is allowed when honest attention code can reach it (the correct styles and the corpus in
`tests/` trace to these) and it is a pure function of its tensor arguments, or an in-place edit of a
tensor the graph itself made. Not on the list, by design: the built-in attention in every form
(`rules.table.FORBIDDEN_OPERATOR`: named `forbidden-api`), operators that reach raw memory or storage
(`set_`, `from_file`, storage and pointer ops; a view with strides of the caller's choosing is allowed only
inside its storage, `bounds.check_made`), an overload that writes into an argument other than its own tensor
(`out=`: refused by `run._operator` from its schema),
anything with effects outside its result (printing, I/O, RNG state), and every namespace but aten.
Anything else is refused as `unsupported-op`, with its name, for the instructor to review.
"""
from __future__ import annotations

import functools

from grader.rules.table import FORBIDDEN_OPERATOR

# aten overload packets (the name before the overload: `aten.bmm.default` -> "bmm")
ALLOWED = frozenset({
    # products
    "matmul", "mm", "bmm", "baddbmm", "addmm", "addbmm", "einsum", "linear", "mv", "dot", "outer", "tensordot",
    "mul", "mul_", "div", "div_", "add", "add_", "sub", "sub_", "rsub", "neg", "reciprocal", "true_divide",
    "floor_divide", "remainder", "fmod",
    # elementwise math
    "sqrt", "rsqrt", "exp", "exp_", "exp2", "log", "log_", "log2", "log1p", "expm1", "pow", "pow_", "square", "abs",
    "clamp", "clamp_", "clamp_min", "clamp_max", "clip", "maximum", "minimum", "tanh", "sigmoid", "sign", "erf",
    "nan_to_num", "nan_to_num_", "softplus", "relu", "gelu", "silu", "allclose", "equal", "isclose", "is_nonzero",
    # reductions and normalisations
    "softmax", "_softmax", "log_softmax", "_log_softmax", "sum", "mean", "amax", "amin", "max",
    "min", "logsumexp", "prod", "all", "any", "cumsum", "norm", "var", "std", "argmax", "argmin",
    "_softmax_backward_data", "_log_softmax_backward_data",
    # masks and comparisons
    "masked_fill", "masked_fill_", "where", "tril", "triu", "tril_", "triu_", "eq", "ne", "lt", "le", "gt", "ge",
    "logical_not", "logical_and", "logical_or", "logical_xor", "bitwise_not", "bitwise_and", "bitwise_or",
    "isinf", "isnan", "isfinite", "isneginf", "isposinf", "masked_scatter",
    # factories (their device is the graph's, checked by the device probe)
    "ones", "zeros", "full", "empty", "arange", "eye", "ones_like", "zeros_like", "full_like", "empty_like",
    "tensor", "scalar_tensor", "lift_fresh", "lift_fresh_copy", "new_ones", "new_zeros", "new_full", "new_empty",
    "new_tensor", "empty_strided", "fill", "fill_", "zero_", "rand", "randn", "rand_like", "randn_like",
    # random numbers (dropout): the parent draws its own (RANDOM below)
    "native_dropout", "native_dropout_backward", "bernoulli", "bernoulli_", "uniform_", "normal_",
    # shapes and views (views of the graph's own tensors: the strides come from their shapes)
    "view", "_unsafe_view", "reshape", "transpose", "transpose_", "permute", "expand", "expand_as", "contiguous",
    "unsqueeze", "unsqueeze_", "squeeze", "squeeze_", "flatten", "unflatten", "t", "mT", "mH", "adjoint",
    "movedim", "moveaxis", "swapaxes", "swapdims", "split", "split_with_sizes", "chunk", "unbind", "narrow", "select",
    "slice", "index", "index_select", "gather", "cat", "concat", "concatenate", "stack", "repeat",
    "repeat_interleave", "view_as", "reshape_as", "alias", "detach", "detach_", "clone", "copy", "copy_", "roll",
    "flip", "tile", "broadcast_to", "diagonal", "diag", "diag_embed", "index_put", "index_put_", "_index_put_impl_",
    "masked_select", "unfold", "pad", "constant_pad_nd", "squeeze_copy", "unsqueeze_copy",
    "expand_copy", "view_copy", "transpose_copy", "permute_copy", "t_copy", "slice_copy", "select_copy", "split_copy",
    "unbind_copy", "alias_copy", "detach_copy", "_reshape_alias", "slice_scatter", "select_scatter",
    # dtypes and devices
    "to", "_to_copy", "type_as", "float", "double", "half", "bfloat16", "int", "long", "bool", "_local_scalar_dense",
    "item", "sym_size", "sym_numel", "sym_stride", "size", "numel", "dim",
    # autograd's own pieces, as they appear in a joint graph
    "ones_like", "zeros_like", "threshold_backward", "tanh_backward", "sigmoid_backward", "masked_fill_backward",
    "sum_to_size", "scatter", "scatter_add", "slice_backward", "select_backward", "index_select_backward",
    "diagonal_backward", "unfold_backward", "squeeze_backward", "unsqueeze_backward", "_unsafe_index",
    "native_dropout_backward", "masked_scatter_backward", "where_backward",
    # views with explicit strides: every view is held inside its storage before it is made (`bounds.check_made`)
    "as_strided", "new_empty_strided",
})

RANDOM = frozenset({"bernoulli", "bernoulli_", "uniform_", "normal_", "rand", "randn", "rand_like", "randn_like",
                    "native_dropout"})
"""Operators that draw random numbers: run with the parent's own generator (`run._random`)."""

UNINITIALISED = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided"})
"""Operators whose values are whatever the parent's memory held: run here, their whole storage is filled with zeros
(the gaps between strides too, which `as_strided` could read), so no byte of the parent's memory reaches a report."""

SPECIAL = frozenset({"getitem"})
"""One element of an operator's list of results (`max.dim`, `native_dropout`, `split`), run by the parent's own code."""


BUILT_IN_MATH_PATH = frozenset({"_safe_softmax"})
"""What the built-in attention's math backend dispatches and no public function reaches otherwise: how it shows
when its fused kernels are switched off (`sdpa_kernel(SDPBackend.MATH)`)."""


def forbidden(packet: str) -> bool:
    """The built-in attention under any of its operator names."""
    return bool(FORBIDDEN_OPERATOR.search(packet)) or packet in BUILT_IN_MATH_PATH


@functools.lru_cache(maxsize=4096)
def verdict(target: str) -> str:
    """"allowed", "forbidden" (the built-in attention) or "unsupported" for one node's target."""
    if target in SPECIAL:
        return "allowed"
    namespace, _, rest = target.partition(".")
    packet = rest.rsplit(".", 1)[0] if "." in rest else rest
    if forbidden(packet) or forbidden(rest):
        return "forbidden"
    return "allowed" if namespace == "aten" and packet in ALLOWED else "unsupported"
