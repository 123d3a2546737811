"""Which parts a top-level statement's code runs for: a rule broken there costs those parts.

Code a graded name reaches (through the names it loads) runs when that part is graded; code that
runs when the submission loads (module level, class bodies, decorators, default values) runs for
both.
"""
from __future__ import annotations

import ast

from grader import syntax_tree
from grader.assignment import GRADED_NAME


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in syntax_tree.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bound(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    return {n.id for n in syntax_tree.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _load_time_regions(statement: ast.stmt) -> list[ast.AST]:
    """The parts of a top-level statement that run when the module loads, not when it is called."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = statement.args
        regions = statement.decorator_list + arguments.defaults + [d for d in arguments.kw_defaults if d]
        regions += [a.annotation for a in syntax_tree.walk(arguments) if isinstance(a, ast.arg) and a.annotation]
        return regions + ([statement.returns] if statement.returns else [])
    if isinstance(statement, ast.ClassDef):
        regions = statement.bases + statement.keywords + statement.decorator_list
        for inner in statement.body:
            regions += _load_time_regions(inner)
        return regions
    return [statement]


def attribution(tree: ast.Module):
    """parts_of(statement, node): the parts whose grading runs `node`."""
    binders: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        for name in _bound(statement):
            binders.setdefault(name, []).append(statement)

    def reach(roots: set[str]) -> set[str]:
        """Each name looked up once, each statement read once: linear even where one line binds N names."""
        seen, read, todo = set(), set(), list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for statement in binders.get(name, []):
                if id(statement) not in read:
                    read.add(id(statement))
                    todo += _loads(statement)
        return seen

    load_time = {id(n) for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))
                 for region in _load_time_regions(s) for n in syntax_tree.walk(region)}
    at_load = reach({n for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))
                     for region in _load_time_regions(s) for n in _loads(region)})
    names_of = {part: reach({graded}) for part, graded in GRADED_NAME.items()}

    bound_by: dict[int, set[str]] = {}  # statement -> what it binds, read once however many breaches it holds

    def parts_of(statement: ast.stmt, node: ast.AST) -> set[str]:
        if id(node) in load_time:
            return set(GRADED_NAME)  # runs in the process both parts are graded in
        if id(statement) not in bound_by:
            bound_by[id(statement)] = _bound(statement)
        bound = bound_by[id(statement)]
        if bound & at_load:
            return set(GRADED_NAME)
        return {part for part, names in names_of.items() if bound & names}

    return parts_of
