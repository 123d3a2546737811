"""Mask values the text shows wrong, whatever the numbers later reproduce:

- a product with an infinity (`mask * float('-inf')`, `-math.inf * (1 - tril)`): 0 · ∞ is NaN, so every
  position the mask keeps becomes NaN (`mask-nan`);
- a fill close to 0 (`masked_fill(future, -1e-9)`, a typo for -1e9): the future's scores become about 0,
  which softmax still weighs like any score, so nothing is hidden (`mask-missing`). Numerically it is a 0/1
  mask multiplied in, and only the text tells the two apart.
"""
from __future__ import annotations

import ast

from grader.handin import syntax_tree

INFINITY_NAMES = {"inf", "infinity"}  # math.inf, torch.inf, np.inf, numpy.Infinity
FILL_CALLS = {"masked_fill", "masked_fill_", "where", "fill_"}


def _is_infinity(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_infinity(node.operand)
    if isinstance(node, ast.Attribute):
        return node.attr.lower() in INFINITY_NAMES
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and node.args:
        text = node.args[0]
        return isinstance(text, ast.Constant) and isinstance(text.value, str) \
            and text.value.strip().lstrip("+-").lower() in INFINITY_NAMES
    return isinstance(node, ast.Constant) and isinstance(node.value, float) and abs(node.value) == float("inf")


def _near_zero(node: ast.AST) -> bool:
    """A nonzero numeric constant of magnitude below 1e-3 (-1e-9, 1e-10), written as a literal."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and 0 < abs(node.value) < 1e-3


def findings(tree: ast.Module, add) -> None:
    """Report each place as add(mistake id, node)."""
    for node in syntax_tree.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) \
                and (_is_infinity(node.left) or _is_infinity(node.right)):
            add("mask-nan", node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FILL_CALLS:
            values = list(node.args[1:]) + [k.value for k in node.keywords if k.arg in ("value", "input", "other")]
            if any(_near_zero(value) for value in values):
                add("mask-missing", node)
