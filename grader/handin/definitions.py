"""Which top-level statements a hand-in's graded names need: the graded defs and classes, and, transitively,
the imports, helpers and assignments they read. Everything else in a notebook (plots, test calls, experiments)
is never run by the grader. Reads syntax trees only.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from grader.handin import syntax_tree

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# statements that may bind a name a definition needs; loops, prints and test calls never do
_MAY_DEFINE = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.Try)


def _bound_names(node: ast.stmt, walked: Callable[[], list[ast.AST]]) -> set[str]:
    """What a top-level statement may bind; `walked()`: its walk, made only where the names are inside."""
    names: set[str] = set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            names.add((alias.asname or alias.name).split(".")[0])
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    else:
        for sub in walked():
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
    return names


def _local_names(function: ast.AST, nodes: list[ast.AST]) -> set[str]:
    """Parameters and names assigned anywhere inside a function (a coarse but safe local set); `nodes`: its walk."""
    names: set[str] = set()
    globals_declared: set[str] = set()
    for sub in nodes:
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not function:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.Global):
            globals_declared.update(sub.names)
    return names - globals_declared


def _used_names(node: ast.AST, nodes: list[ast.AST]) -> set[str]:
    """Module-level names a statement reads: a function's own locals are not module names. `nodes`: its walk."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        outer = set()
        for part in node.decorator_list + node.args.defaults + node.args.kw_defaults + [node.returns]:
            if part is not None:
                outer |= syntax_tree.loaded_names(syntax_tree.walk(part))
        for arg in syntax_tree.walk(node.args):
            if isinstance(arg, ast.arg) and arg.annotation is not None:
                outer |= syntax_tree.loaded_names(syntax_tree.walk(arg.annotation))
        return outer | (syntax_tree.loaded_names(nodes) - _local_names(node, nodes))
    if isinstance(node, ast.ClassDef):
        used = set()
        for part in node.bases + node.keywords + node.decorator_list:
            used |= syntax_tree.loaded_names(syntax_tree.walk(part))
        for statement in node.body:
            used |= _used_names(statement, syntax_tree.walk(statement))
        return used
    return syntax_tree.loaded_names(nodes)


def extract_definitions(statements: list[ast.stmt], graded_names: tuple[str, ...]) -> list[ast.stmt]:
    """Keep what the exercise's `graded_names` need, transitively, in their original order.

    A statement is kept when it binds a name that a graded name (or a kept statement) reads: the
    graded defs and classes, the helpers, imports and assignments they use. Everything else (a
    notebook's plots, test calls, the provided self-check helpers, a student's own experiments)
    never runs in the grader and is never judged by the grading rules. A worklist of names makes
    this linear: each name is looked up once, each statement kept once.
    """
    kept = [False] * len(statements)
    walked: dict[int, list[ast.AST]] = {}  # statement index -> its walk, made once for both reads below

    def nodes_of(index: int) -> list[ast.AST]:
        if index not in walked:
            walked[index] = syntax_tree.walk(statements[index])
        return walked[index]

    binders: dict[str, list[int]] = {}  # name -> the statements that may bind it
    for index, statement in enumerate(statements):
        if isinstance(statement, _DEFINITIONS + _MAY_DEFINE):
            for name in _bound_names(statement, lambda: nodes_of(index)):
                binders.setdefault(name, []).append(index)
        # a `__future__` import binds no name anything reads, but changes how every later statement compiles
        kept[index] = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
    pending = list(graded_names)
    looked_up: set[str] = set()
    while pending:
        name = pending.pop()
        if name in looked_up:
            continue
        looked_up.add(name)
        for index in binders.get(name, ()):
            if not kept[index]:
                kept[index] = True
                pending += _used_names(statements[index], nodes_of(index))
    return [s for s, keep in zip(statements, kept) if keep]
