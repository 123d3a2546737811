"""The speed-up decorators a grader runs as the identity: `@torch.compile` and `@torch.jit.script` change how a
function runs, never what it computes. The worker cannot compile (no compiler, no files, no dispatcher games),
so the reader drops these decorator lines and the function runs as written, with the same values.

Only a decorator that is exactly one of them, spelled through the submission's own imports (`torch.compile`,
`torch.compile(mode=...)`, `import torch as t` then `t.jit.script`, `from torch import jit`), is dropped; a
call of `torch.compile` anywhere else is judged by the grading rules as before.
"""
from __future__ import annotations

import ast

from grader.handin import syntax_tree

SPEED_UPS = frozenset({"torch.compile", "torch.jit.script"})


def imports_of(statements: list[ast.stmt]) -> dict[str, str]:
    """local name -> the dotted path a top-level import binds it to."""
    bound: dict[str, str] = {}
    for statement in statements:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                bound[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
    return bound


def _path(node: ast.AST, imports: dict[str, str]) -> str | None:
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imports:
        return None
    return ".".join([imports[node.id]] + names[::-1])


def _is_speed_up(decorator: ast.expr, imports: dict[str, str]) -> bool:
    if isinstance(decorator, ast.Call):  # torch.compile(mode="reduce-overhead"): its arguments are options
        decorator = decorator.func
    return _path(decorator, imports) in SPEED_UPS


def speed_up_lines(statement: ast.stmt, imports: dict[str, str]) -> set[int]:
    """The lines (in the statement's own numbering) of its decorators to run as the identity; `imports`:
    imports_of the whole submission."""
    lines: set[int] = set()
    for node in syntax_tree.walk(statement):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                if _is_speed_up(decorator, imports):
                    lines.update(range(decorator.lineno, decorator.end_lineno + 1))
    return lines
