"""Fix rewrites for names spelled wrong: bare `matmul`, `nn.dropout`, `torch.Tenser`, `is_casual`."""
from __future__ import annotations

import ast

from grader.fixes.rewrites.splices import Splice, one_line, replace, segment
from grader.static_pass import near


def bare_matmul(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    return [replace(n.func, "torch.matmul") for n in ast.walk(graded)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "matmul"]


def dropout_lowercase(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    return [Splice(n.lineno, n.end_col_offset - len("dropout"), n.end_col_offset, "Dropout") for n in ast.walk(graded)
            if isinstance(n, ast.Attribute) and n.attr == "dropout" and isinstance(n.value, ast.Name)
            and n.value.id == "nn" and one_line(n)]


def misspelled_tensor(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    import torch

    return [replace(n, "torch.Tensor") for n in ast.walk(graded)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "torch"
            and n.attr != "Tensor" and near(n.attr, "Tensor") and not hasattr(torch, n.attr)
            and one_line(n)]


def is_causal_typo(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """Every spelling within two edits of `is_causal`, renamed where it is bound and where it is read."""
    def typo(name: str | None) -> bool:
        return bool(name) and name != "is_causal" and near(name.lower(), "is_causal")

    splices = []
    for n in ast.walk(graded):
        if not one_line(n):
            continue
        if isinstance(n, ast.Name) and typo(n.id):
            splices.append(replace(n, "is_causal"))
        elif isinstance(n, ast.Attribute) and typo(n.attr):
            splices.append(Splice(n.lineno, n.end_col_offset - len(n.attr.encode()), n.end_col_offset, "is_causal"))
        elif isinstance(n, ast.arg) and typo(n.arg):
            splices.append(Splice(n.lineno, n.col_offset, n.col_offset + len(n.arg.encode()), "is_causal"))
        elif isinstance(n, ast.keyword) and typo(n.arg):
            splices.append(Splice(n.lineno, n.col_offset, n.col_offset + len(n.arg.encode()), "is_causal"))
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and typo(n.value) \
                and segment(lines, n)[1:-1] == n.value:
            splices.append(Splice(n.lineno, n.col_offset + 1, n.end_col_offset - 1, "is_causal"))
    return splices
