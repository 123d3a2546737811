"""Which parts a top-level statement's code runs for: a rule broken there costs those parts.

Code a graded name reaches (through the names it loads) runs when that part is graded; code that
runs when the submission loads (module level, class bodies, decorators, default values) runs for
both.
"""
from __future__ import annotations

import ast

from grader.handin import syntax_tree


def _bound(statement: ast.stmt, nodes: list[ast.AST]) -> set[str]:
    """What a top-level statement binds; `nodes`: the statement's walk."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    return {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


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


def attribution(tree: ast.Module, walked: dict[int, list[ast.AST]], graded_name: dict[str, str]):
    """parts_of(statement, node): the parts (of `graded_name`: part id -> the name it grades) whose grading runs
    `node`. `walked`: each top-level statement's walk (syntax_tree.walk_statements), read here and by the rules
    instead of walking each statement again."""
    bound_by = {id(s): _bound(s, walked[id(s)]) for s in tree.body}
    # read once, however many parts reach the statement
    loads_of = {id(s): syntax_tree.loaded_names(walked[id(s)]) for s in tree.body}
    binders: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        for name in bound_by[id(statement)]:
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
                    todo += loads_of[id(statement)]
        return seen

    def region_nodes(statement: ast.stmt, region: ast.AST) -> list[ast.AST]:
        return walked[id(statement)] if region is statement else syntax_tree.walk(region)

    regions = [(s, region_nodes(s, region)) for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))
               for region in _load_time_regions(s)]
    load_time = {id(n) for _, nodes in regions for n in nodes}
    at_load = reach({name for _, nodes in regions for name in syntax_tree.loaded_names(nodes)})
    names_of = {part: reach({graded}) for part, graded in graded_name.items()}

    def parts_of(statement: ast.stmt, node: ast.AST) -> set[str]:
        if id(node) in load_time:
            return set(graded_name)  # runs in the process every part is graded in
        bound = bound_by[id(statement)]
        if bound & at_load:
            return set(graded_name)
        return {part for part, names in names_of.items() if bound & names}

    return parts_of
