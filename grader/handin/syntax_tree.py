"""`ast.parse` for a process that grades in several threads at once (grade-all --jobs N).

CPython 3.11 keeps the AST constructor's recursion depth in interpreter-wide state: two threads
converting a tree at the same time (one can be switched out mid-conversion by a garbage collection)
raise "SystemError: AST constructor recursion depth mismatch" (python/cpython gh-106905 and its
reports). One lock around the conversion serialises milliseconds of work per submission.
"""
from __future__ import annotations

import ast
import threading
from functools import lru_cache

_CONVERSION = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _CONVERSION:
        return ast.parse(source, filename)


@lru_cache(maxsize=4)
def parsed(source: str) -> ast.Module:
    """`source`'s tree, parsed once for every reader of one hand-in in the parent (the rules, the static pass, the
    fix candidates): the same tree goes to each, so no reader may change it. A SyntaxError is not kept: each
    caller gets its own."""
    return parse(source)


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node under `node` (itself first), in `ast.walk`'s order, as a list.

    `ast.walk` runs two generators per node; the parent walks the whole hand-in several times, and at the
    code cap that was most of its reading time (attribute chains: 10 s of 14 s in the rules)."""
    found = [node]
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, ast.AST):
                found.append(value)
            elif isinstance(value, list):
                found.extend(item for item in value if isinstance(item, ast.AST))
    return found


def loaded_names(nodes: list[ast.AST]) -> set[str]:
    """The names read (not bound) among `nodes` (a walk)."""
    return {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def walk_statements(tree: ast.Module) -> dict[int, list[ast.AST]]:
    """Each top-level statement's walk, keyed by the statement's id: the rules and their attribution to
    parts both read every statement, and at the code cap each walk of the whole hand-in costs most of a second."""
    return {id(statement): walk(statement) for statement in tree.body}


def parameter_defaults(arguments: ast.arguments) -> list[tuple[ast.arg, ast.expr]]:
    """Each parameter that has a default, with it: positional ones (defaults fill the last of them) and keyword-only
    ones (whose missing defaults are None)."""
    positional = arguments.posonlyargs + arguments.args
    found = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    return found + [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
