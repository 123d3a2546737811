"""What every fix rule works with: a `Splice` (a byte range of one of the student's lines and its
replacement) and the syntax-tree lookups the rules share (a call's name, the graded functions, a name's
last assignment). Column offsets in a syntax tree count UTF-8 bytes (students comment in Chinese), so
lines are bytes here and a splice is in bytes too."""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import Iterator


@dataclass(frozen=True)
class Splice:
    line: int
    start: int  # byte offsets in the line
    end: int
    text: str


def one_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno


def segment(lines: list[bytes], node: ast.AST) -> str:
    return lines[node.lineno - 1][node.col_offset:node.end_col_offset].decode("utf-8", errors="replace")


def replace(node: ast.AST, text: str) -> Splice:
    return Splice(node.lineno, node.col_offset, node.end_col_offset, text)


def call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def functions(node: ast.AST) -> Iterator[ast.FunctionDef]:
    """The graded function itself, or the graded class's methods."""
    if isinstance(node, ast.FunctionDef):
        yield node
    elif isinstance(node, ast.ClassDef):
        yield from (m for m in node.body if isinstance(m, ast.FunctionDef))


def input_name(function: ast.FunctionDef) -> str | None:
    """The first tensor argument (`Q` of the function, `q` of forward): what a mask's device follows."""
    names = [a.arg for a in function.args.args if a.arg != "self"]
    return names[0] if names and function.name != "__init__" else None


# --- the rules: (lines, graded node) -> splices ------------------------------------------------------


def transposed(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and call_name(n) in ("transpose", "permute") or
               isinstance(n, ast.Attribute) and n.attr in ("mT", "T") for n in ast.walk(node))


Assignments = dict[str, tuple[list[int], list[ast.Assign]]]


def assignments_in(function: ast.FunctionDef) -> Assignments:
    """Name -> the lines and nodes of its plain assignments in the function, in line order (one walk)."""
    found: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node)
    ordered = {name: sorted(nodes, key=lambda a: a.lineno) for name, nodes in found.items()}
    return {name: ([a.lineno for a in nodes], nodes) for name, nodes in ordered.items()}


def last_assigned(assignments: Assignments, name: str, line: int) -> ast.AST | None:
    """The value last assigned to `name` above `line` (straight-line code: what the student reads)."""
    lines, nodes = assignments.get(name, ([], []))
    index = bisect.bisect_left(lines, line)
    return nodes[index - 1].value if index else None


def self_attribute(node: ast.AST) -> str | None:
    """`attr` when the node is `self.attr`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None
