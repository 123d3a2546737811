"""Fix rewrites for the arithmetic of attention: `.contiguous()` before `.view`, the softmax dim, the
√d_k scale, `torch.sqrt` of an int."""
from __future__ import annotations

import ast

from grader.fixes.rewrites.splices import (Splice, assignments_in, call_name, functions, last_assigned, one_line,
                                           replace, segment, transposed)


def missing_contiguous(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`.view(` on a transposed tensor (in the same expression, or a name last assigned one) gets `.contiguous()`."""
    splices = []
    for function in functions(graded):
        assignments = assignments_in(function)
        for n in ast.walk(function):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "view"):
                continue
            receiver = n.func.value
            if isinstance(receiver, ast.Call) and call_name(receiver) == "contiguous" or not one_line(receiver):
                continue
            earlier = last_assigned(assignments, receiver.id, n.lineno) if isinstance(receiver, ast.Name) else None
            if transposed(receiver) or earlier is not None and transposed(earlier):
                splices.append(Splice(receiver.end_lineno, receiver.end_col_offset, receiver.end_col_offset,
                                      ".contiguous()"))
    return splices


def softmax_dim(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and call_name(n) in ("softmax", "log_softmax") and one_line(n)):
            continue
        method = isinstance(n.func, ast.Attribute) and not (isinstance(n.func.value, ast.Name)
                                                             and n.func.value.id in ("torch", "F", "functional"))
        given = next((k.value for k in n.keywords if k.arg == "dim"), None)
        if given is None and len(n.args) > (0 if method else 1):
            given = n.args[0 if method else 1]
        if given is not None and segment(lines, given) != "-1":
            splices.append(replace(given, "-1"))
        elif given is None:
            splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                  (", " if n.args or n.keywords else "") + "dim=-1"))
    return splices


def _key_of_product(node: ast.AST) -> ast.AST | None:
    """In `Q @ K.transpose(-2, -1)` / `matmul(Q, K.mT)`: K, the tensor whose last dim is d_k."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        operands = [node.right]
    elif isinstance(node, ast.Call) and call_name(node) in ("matmul", "bmm") and len(node.args) == 2:
        operands = [node.args[1]]
    else:
        return None
    for operand in operands:
        if isinstance(operand, ast.Call) and call_name(operand) == "transpose" and isinstance(operand.func, ast.Attribute):
            return operand.func.value
        if isinstance(operand, ast.Attribute) and operand.attr in ("mT", "T"):
            return operand.value
    return None


def scale(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """The scores line divided by √(the key's last dim): `s = Q @ K.mT` or `s = Q @ K.mT / d_k`
    becomes `s = Q @ K.mT / math.sqrt(K.size(-1))`."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Assign) and one_line(n.value)):
            continue
        value = n.value
        inner = value.left if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Div, ast.Mult)) else value
        while isinstance(inner, ast.BinOp) and isinstance(inner.op, (ast.Div, ast.Mult)):
            inner = inner.left
        key = _key_of_product(inner)
        if key is None or not one_line(key):
            continue
        product = segment(lines, inner)
        wrapped = product if isinstance(inner, ast.Call) else f"({product})"
        # the whole value is replaced: a wrong factor goes, the student's own product stays
        splices.append(replace(value, f"{wrapped} / math.sqrt({segment(lines, key)}.size(-1))"))
    return splices


def sqrt_of_int(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`torch.sqrt(d_k)` -> `d_k ** 0.5`, `torch.rsqrt(d_k)` -> `d_k ** -0.5`: a power works on an int and a
    tensor alike and needs no import (the regrade keeps it only where the argument was a number)."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("sqrt", "rsqrt")
                and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and len(n.args) == 1
                and not n.keywords and one_line(n)):
            continue
        argument = segment(lines, n.args[0])
        atom = isinstance(n.args[0], (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant))
        base = argument if atom else f"({argument})"
        splices.append(replace(n, f"{base} ** {'0.5' if n.func.attr == 'sqrt' else '-0.5'}"))
    return splices


def float_head_dim(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`args.dim / args.n_heads` -> `args.dim // args.n_heads`: a true division of a size by a head count (or
    head dim) that makes a size a float. Only a plain name divided by a plain name that says "head" is touched."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and one_line(n)):
            continue
        # a count of heads (`args.n_heads`, `self.head_dim`), never a scale such as `math.sqrt(self.head_dim)`
        if not (isinstance(n.right, (ast.Name, ast.Attribute)) and "head" in segment(lines, n.right).lower()
                and isinstance(n.left, (ast.Name, ast.Attribute))):
            continue
        between = lines[n.lineno - 1][n.left.end_col_offset:n.right.col_offset]
        slash = between.find(b"/")
        if slash >= 0 and between[slash:slash + 2] != b"//":
            at = n.left.end_col_offset + slash
            splices.append(Splice(n.lineno, at, at + 1, "//"))
    return splices

