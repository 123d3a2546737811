"""The smallest edit that lets a crashing call run, for the crashes no catalog mistake names: a name read that is
bound nowhere (`NameError`) and `torch.dropout(x, p)` without the `train` it requires (`TypeError`).

A repair is no lesson to show (the catalog has no id for it, and the line may hold other slips): grader.fixes.behind
regrades the repaired copy only to see what the crash hid. Text only: nothing here runs anything.
"""
from __future__ import annotations

import ast
import re

from grader.fixes.candidates import Candidate, from_splices
from grader.fixes.rewrites.splices import Splice, one_line, replace
from grader.handin import syntax_tree
from grader.static_pass import near

UNDEFINED_NAME = re.compile(r"NameError: name '([A-Za-z_][A-Za-z0-9_]{0,80})' is not defined")
DROPOUT_WITHOUT_TRAIN = re.compile(r"TypeError: dropout\(\) missing 1 required positional arguments?: \"?'?train")


def repair(source: str, error: str, graded_name: str) -> Candidate | None:
    """The edit of `graded_name`'s code that removes `error`'s cause, or None when no edit is plain enough."""
    try:
        tree = syntax_tree.parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    graded = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == graded_name),
                  None)
    if graded is None:
        return None
    lines = source.split("\n")
    if (undefined := UNDEFINED_NAME.search(error)) is not None:
        return from_splices("NameError", lines, _name_meant(graded, undefined.group(1)))
    if DROPOUT_WITHOUT_TRAIN.search(error):
        return from_splices("TypeError", lines, _dropout_train(graded))
    return None


def _functions(graded: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(graded) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _bound_in(function: ast.FunctionDef) -> set[str]:
    """The names a function binds: its parameters and every name it assigns."""
    arguments = function.args
    bound = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    bound |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    return bound | {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _self_attributes(graded: ast.AST) -> set[str]:
    """The attributes the class's methods set on `self` (`self.scale = ...`)."""
    return {n.attr for n in ast.walk(graded) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}


def _name_meant(graded: ast.AST, missing: str) -> list[Splice]:
    """Every read of `missing` in a function that does not bind it, replaced by the one name plainly meant: the
    attribute of that name the class stores on `self`, else the one name within two edits that the function binds,
    else the one attribute within two edits on `self`. Nothing when the choice is not unique."""
    attributes = _self_attributes(graded) if isinstance(graded, ast.ClassDef) else set()
    splices = []
    for function in _functions(graded):
        bound = _bound_in(function)
        if missing in bound:
            continue
        reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == missing
                 and isinstance(n.ctx, ast.Load) and one_line(n)]
        if not reads:
            continue
        has_self = bool(function.args.args) and function.args.args[0].arg == "self"
        local = sorted(name for name in bound if near(name, missing))
        similar = sorted(attr for attr in attributes if near(attr, missing))
        if has_self and missing in attributes:
            meant = f"self.{missing}"
        elif len(local) == 1:
            meant = local[0]
        elif has_self and len(similar) == 1:
            meant = f"self.{similar[0]}"
        else:
            return []
        splices += [replace(read, meant) for read in reads]
    return splices


def _dropout_train(graded: ast.AST) -> list[Splice]:
    """`torch.dropout(x, p)` -> `torch.dropout(x, p, self.training)` in a method (the module's own mode), `True` in a
    plain function (as F.dropout's default)."""
    splices = []
    for function in _functions(graded):
        has_self = bool(function.args.args) and function.args.args[0].arg == "self"
        for n in ast.walk(function):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "dropout"
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and len(n.args) == 2
                    and not n.keywords and one_line(n)):
                end = n.args[-1].end_col_offset
                splices.append(Splice(n.lineno, end, end, ", self.training" if has_self else ", True"))
    return splices
