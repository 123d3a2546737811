"""The rules of mechanical fixes: for one catalog mistake, where the student's graded code shows it
and the smallest edit of those spots (`matmul(` -> `torch.matmul(`, `diagonal=0` -> `diagonal=1`, ...).

Each rule reads the extracted module's syntax tree (never runs anything) and returns splices of
the student's own lines. Column offsets in a syntax tree count UTF-8 bytes (students comment in
Chinese), so a rule gets the lines as bytes (encoded once: a hostile line may be long) and a splice
is in bytes too.
"""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import Callable, Iterator

from grader.static_analysis import CREATION_FUNCTIONS, DEVICE_STRINGS, edit_distance


@dataclass(frozen=True)
class Splice:
    line: int
    start: int  # byte offsets in the line
    end: int
    text: str


def _one_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno


def _segment(lines: list[bytes], node: ast.AST) -> str:
    return lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")


def _replace(node: ast.AST, text: str) -> Splice:
    return Splice(node.lineno, node.col_offset, node.end_col_offset, text)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _functions(node: ast.AST) -> Iterator[ast.FunctionDef]:
    """The graded function itself, or the graded class's methods."""
    if isinstance(node, ast.FunctionDef):
        yield node
    elif isinstance(node, ast.ClassDef):
        yield from (m for m in node.body if isinstance(m, ast.FunctionDef))


def _input_name(function: ast.FunctionDef) -> str | None:
    """The first tensor argument (`Q` of the function, `q` of forward): what a mask's device follows."""
    names = [a.arg for a in function.args.args if a.arg != "self"]
    return names[0] if names and function.name != "__init__" else None


# --- the rules: (lines, graded node) -> splices ------------------------------------------------------


def bare_matmul(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    return [_replace(n.func, "torch.matmul") for n in ast.walk(graded)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "matmul"]


def dropout_lowercase(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    return [Splice(n.lineno, n.end_col_offset - len("dropout"), n.end_col_offset, "Dropout") for n in ast.walk(graded)
            if isinstance(n, ast.Attribute) and n.attr == "dropout" and isinstance(n.value, ast.Name)
            and n.value.id == "nn" and _one_line(n)]


def misspelled_tensor(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    import torch

    return [_replace(n, "torch.Tensor") for n in ast.walk(graded)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "torch"
            and n.attr != "Tensor" and not hasattr(torch, n.attr) and edit_distance(n.attr, "Tensor") <= 2
            and _one_line(n)]


def is_causal_typo(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """Every spelling within two edits of `is_causal`, renamed where it is bound and where it is read."""
    def typo(name: str | None) -> bool:
        return bool(name) and name != "is_causal" and edit_distance(name.lower(), "is_causal") <= 2

    splices = []
    for n in ast.walk(graded):
        if not _one_line(n):
            continue
        if isinstance(n, ast.Name) and typo(n.id):
            splices.append(_replace(n, "is_causal"))
        elif isinstance(n, ast.Attribute) and typo(n.attr):
            splices.append(Splice(n.lineno, n.end_col_offset - len(n.attr.encode()), n.end_col_offset, "is_causal"))
        elif isinstance(n, ast.arg) and typo(n.arg):
            splices.append(Splice(n.lineno, n.col_offset, n.col_offset + len(n.arg.encode()), "is_causal"))
        elif isinstance(n, ast.keyword) and typo(n.arg):
            splices.append(Splice(n.lineno, n.col_offset, n.col_offset + len(n.arg.encode()), "is_causal"))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and typo(n.value) \
                and _segment(lines, n)[1:-1] == n.value:
            splices.append(Splice(n.lineno, n.col_offset + 1, n.end_col_offset - 1, "is_causal"))
    return splices


def _transposed(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _call_name(n) in ("transpose", "permute") or
               isinstance(n, ast.Attribute) and n.attr in ("mT", "T") for n in ast.walk(node))


Assignments = dict[str, tuple[list[int], list[ast.Assign]]]


def _assignments(function: ast.FunctionDef) -> Assignments:
    """Name -> the lines and nodes of its plain assignments in the function, in line order (one walk)."""
    found: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node)
    ordered = {name: sorted(nodes, key=lambda a: a.lineno) for name, nodes in found.items()}
    return {name: ([a.lineno for a in nodes], nodes) for name, nodes in ordered.items()}


def _last_assigned(assignments: Assignments, name: str, line: int) -> ast.AST | None:
    """The value last assigned to `name` above `line` (straight-line code: what the student reads)."""
    lines, nodes = assignments.get(name, ([], []))
    index = bisect.bisect_left(lines, line)
    return nodes[index - 1].value if index else None


def missing_contiguous(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`.view(` on a transposed tensor (in the same expression, or a name last assigned one) gets `.contiguous()`."""
    splices = []
    for function in _functions(graded):
        assignments = _assignments(function)
        for n in ast.walk(function):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "view"):
                continue
            receiver = n.func.value
            if isinstance(receiver, ast.Call) and _call_name(receiver) == "contiguous" or not _one_line(receiver):
                continue
            earlier = _last_assigned(assignments, receiver.id, n.lineno) if isinstance(receiver, ast.Name) else None
            if _transposed(receiver) or earlier is not None and _transposed(earlier):
                splices.append(Splice(receiver.end_lineno, receiver.end_col_offset, receiver.end_col_offset,
                                      ".contiguous()"))
    return splices


def mask_diagonal(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`triu(x)` / `triu(x, diagonal=0)` -> `diagonal=1`; `tril(x, diagonal=-1)` -> `diagonal=0`."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and _call_name(n) in ("triu", "tril") and _one_line(n)):
            continue
        right = "1" if _call_name(n) == "triu" else "0"
        method = isinstance(n.func, ast.Attribute) and not (isinstance(n.func.value, ast.Name)
                                                             and n.func.value.id == "torch")
        given = next((k.value for k in n.keywords if k.arg == "diagonal"), None)
        if given is None and len(n.args) > (0 if method else 1):
            given = n.args[0 if method else 1]
        if given is not None and _segment(lines, given) != right:
            splices.append(_replace(given, right))
        elif given is None and right == "1":
            splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                  (", " if n.args or n.keywords else "") + "diagonal=1"))
    return splices


def softmax_dim(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and _call_name(n) in ("softmax", "log_softmax") and _one_line(n)):
            continue
        method = isinstance(n.func, ast.Attribute) and not (isinstance(n.func.value, ast.Name)
                                                             and n.func.value.id in ("torch", "F", "functional"))
        given = next((k.value for k in n.keywords if k.arg == "dim"), None)
        if given is None and len(n.args) > (0 if method else 1):
            given = n.args[0 if method else 1]
        if given is not None and _segment(lines, given) != "-1":
            splices.append(_replace(given, "-1"))
        elif given is None:
            splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                  (", " if n.args or n.keywords else "") + "dim=-1"))
    return splices


def _key_of_product(node: ast.AST) -> ast.AST | None:
    """In `Q @ K.transpose(-2, -1)` / `matmul(Q, K.mT)`: K, the tensor whose last dim is d_k."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        operands = [node.right]
    elif isinstance(node, ast.Call) and _call_name(node) in ("matmul", "bmm") and len(node.args) == 2:
        operands = [node.args[1]]
    else:
        return None
    for operand in operands:
        if isinstance(operand, ast.Call) and _call_name(operand) == "transpose" and isinstance(operand.func, ast.Attribute):
            return operand.func.value
        if isinstance(operand, ast.Attribute) and operand.attr in ("mT", "T"):
            return operand.value
    return None


def scale(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """The scores line divided by √(the key's last dim): `s = Q @ K.mT` or `s = Q @ K.mT / d_k`
    becomes `s = Q @ K.mT / math.sqrt(K.size(-1))`."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Assign) and _one_line(n.value)):
            continue
        value = n.value
        inner = value.left if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)) else value
        while isinstance(inner, ast.BinOp) and isinstance(inner.op, (ast.Div, ast.Mult)):
            inner = inner.left
        key = _key_of_product(inner)
        if key is None or not _one_line(key):
            continue
        product = _segment(lines, inner)
        wrapped = product if isinstance(inner, ast.Call) else f"({product})"
        # the whole value is replaced: a wrong factor goes, the student's own product stays
        splices.append(_replace(value, f"{wrapped} / math.sqrt({_segment(lines, key)}.size(-1))"))
    return splices


def sqrt_of_int(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`torch.sqrt(d_k)` -> `d_k ** 0.5`, `torch.rsqrt(d_k)` -> `d_k ** -0.5`: a power works on an int and a
    tensor alike and needs no import (the regrade keeps it only where the argument was a number)."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("sqrt", "rsqrt")
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and len(n.args) == 1
                and not n.keywords and _one_line(n)):
            continue
        argument = _segment(lines, n.args[0])
        atom = isinstance(n.args[0], (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant))
        base = argument if atom else f"({argument})"
        splices.append(_replace(n, f"{base} ** {'0.5' if n.func.attr == 'sqrt' else '-0.5'}"))
    return splices


def mask_device(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`torch.ones(T, T)` built in a call -> `torch.ones(T, T, device=Q.device)` (Q: the input)."""
    splices = []
    for function in _functions(graded):
        source = _input_name(function)
        if source is None:
            continue
        for n in ast.walk(function):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in CREATION_FUNCTIONS \
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and _one_line(n) \
                    and not any(k.arg == "device" for k in n.keywords):
                splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                      (", " if n.args or n.keywords else "") + f"device={source}.device"))
    return splices


def _tensor_made_in(assignments: Assignments, value: ast.AST, line: int) -> bool:
    """A tensor creation (or triu/tril), directly or through a name last assigned one."""
    if isinstance(value, ast.Name):
        value = _last_assigned(assignments, value.id, line)
    return value is not None and any(isinstance(c, ast.Call) and _call_name(c) in CREATION_FUNCTIONS | {"triu", "tril"}
                                     for c in ast.walk(value))


def hardcoded_device(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`device="cuda"` or `device=<a module-level device>` -> `device=Q.device`; `.cuda()` and `.to("cpu")`
    -> `.to(Q.device)`, inside a call with an input Q to follow."""
    splices = []
    for function in _functions(graded):
        source = _input_name(function)
        if source is None:
            continue
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)} | {
            t.id for a in ast.walk(function) if isinstance(a, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}
        for n in ast.walk(function):
            fixed_device = isinstance(n, ast.keyword) and n.arg == "device" and (
                isinstance(n.value, ast.Constant) and n.value.value in DEVICE_STRINGS
                or isinstance(n.value, ast.Name) and n.value.id not in local)
            if fixed_device and _one_line(n.value):
                splices.append(_replace(n.value, f"{source}.device"))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "cpu") \
                    and not n.args and not n.keywords and _one_line(n):
                start = n.func.value.end_col_offset
                splices.append(Splice(n.lineno, start, n.end_col_offset, f".to({source}.device)"))
            elif isinstance(n, ast.Call) and _call_name(n) == "to" and len(n.args) == 1 and not n.keywords \
                    and isinstance(n.args[0], ast.Constant) and n.args[0].value in DEVICE_STRINGS and _one_line(n):
                splices.append(_replace(n.args[0], f"{source}.device"))
    return splices


def mask_not_buffer(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`self.mask = torch.triu(...)` (or a name holding it) in __init__ -> `self.register_buffer("mask", ...)`."""
    splices = []
    for function in _functions(graded):
        if function.name != "__init__":
            continue
        assignments = _assignments(function)
        for n in ast.walk(function):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute) \
                    and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id == "self" \
                    and _one_line(n) and _tensor_made_in(assignments, n.value, n.lineno):
                text = f'self.register_buffer("{n.targets[0].attr}", {_segment(lines, n.value)})'
                splices.append(Splice(n.lineno, n.col_offset, n.end_col_offset, text))
    return splices


RULES: dict[str, Callable[[list[bytes], ast.AST], list[Splice]]] = {
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
    "mask-device": mask_device,
    "hardcoded-device": hardcoded_device,
    "mask-not-buffer": mask_not_buffer,
}
"""Mistake id -> its rule. The other catalog mistakes have no one-line fix (a missing mask, a head
split in the wrong order, a Python loop): the catalog's explanation is all a student gets."""
