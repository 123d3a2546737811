"""The rewrites of mechanical fixes: for one catalog mistake, where the student's graded code shows it
and the smallest edit of those spots (`matmul(` -> `torch.matmul(`, `diagonal=0` -> `diagonal=1`, ...).

Each rewrite reads the extracted module's syntax tree (never runs anything) and returns splices of
the student's own lines. Column offsets in a syntax tree count UTF-8 bytes (students comment in
Chinese), so a rewrite gets the lines as bytes (encoded once: a hostile line may be long) and a splice
is in bytes too.
"""
from __future__ import annotations

import ast
from typing import Callable

from grader.fixes.rewrites.arithmetic import float_head_dim, missing_contiguous, scale, softmax_dim, sqrt_of_int
from grader.fixes.rewrites.masks import (hardcoded_device, mask_device, mask_diagonal, mask_not_bool, mask_not_buffer,
                                         tensor_truth_value)
from grader.fixes.rewrites.names import bare_matmul, dropout_lowercase, is_causal_typo, misspelled_tensor
from grader.fixes.rewrites.splices import Splice

REWRITES: dict[str, Callable[[list[bytes], ast.AST], list[Splice]]] = {
    "bare-matmul": bare_matmul,
    "dropout-lowercase": dropout_lowercase,
    "misspelled-tensor": misspelled_tensor,
    "is-causal-typo": is_causal_typo,
    "missing-contiguous": missing_contiguous,
    "mask-diagonal": mask_diagonal,
    "softmax-dim": softmax_dim,
    "missing-scale": scale,
    "wrong-scale": scale,
    "sqrt-of-int": sqrt_of_int,
    "mask-not-bool": mask_not_bool,
    "float-head-dim": float_head_dim,
    "mask-device": mask_device,
    "hardcoded-device": hardcoded_device,
    "mask-not-buffer": mask_not_buffer,
    "tensor-truth-value": tensor_truth_value,
}
"""Mistake id -> its rule. The other catalog mistakes have no one-line fix (a missing mask, a head
split in the wrong order, a Python loop): the catalog's explanation is all a student gets."""
