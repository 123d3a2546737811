"""Student code as the worker runs it: each top-level statement rewritten so that every attribute read and
write, subscript and import goes through the guards (guard.py), then compiled on its own with the
`__future__` features of the statements before it.
"""
from __future__ import annotations

import __future__
import ast
import types

from grader.rules.table import CLASS_DUNDERS, DENIED_SPECIAL_METHODS, INTERPRETER_ATTRIBUTE
from grader.sandbox.guard import ITEM, MATCH_REFUSED, READ, REFUSE, WRITE, Guard


class GuardedAccess(ast.NodeTransformer):
    """The rewrite: every attribute, subscript and attribute target of student code through the guards.
    Match-class keyword patterns read attributes without a call the rewrite could add: the ones the
    guard would refuse are refused here, before the statement runs."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            call = ast.Call(func=ast.Name(READ, ast.Load()), args=[node.value, ast.Constant(node.attr)], keywords=[])
            return ast.copy_location(call, node)
        node.value = ast.copy_location(
            ast.Call(func=ast.Name(WRITE, ast.Load()), args=[node.value, ast.Constant(node.attr)], keywords=[]), node)
        return node

    def visit_Subscript(self, node: ast.Subscript):
        self.generic_visit(node)
        node.value = ast.copy_location(ast.Call(func=ast.Name(ITEM, ast.Load()), args=[node.value], keywords=[]), node)
        return node

    def visit_Match(self, node: ast.Match):
        """A class pattern reads its keyword attributes without a call the rewrite could add: a match
        that reads one the guard would refuse or answer as on a GPU is refused when it runs."""
        for pattern in ast.walk(node):
            for name in pattern.kwd_attrs if isinstance(pattern, ast.MatchClass) else ():
                if name.startswith("_") or name in MATCH_REFUSED or INTERPRETER_ATTRIBUTE.match(name):
                    mistake = "device-probing" if name in MATCH_REFUSED else "introspection"
                    call = ast.Call(func=ast.Name(REFUSE, ast.Load()),
                                    args=[ast.Constant(mistake), ast.Constant(f"the pattern attribute {name}")], keywords=[])
                    return ast.copy_location(ast.Expr(call), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name):
        if node.id in (READ, WRITE, ITEM, REFUSE, "__builtins__", "__import__"):
            self.guard.refuse("introspection", f"the name {node.id}")
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef):
        if node.name in DENIED_SPECIAL_METHODS:
            self.guard.refuse("tampering", f"defining the special method {node.name}")
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef):
        for statement in node.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else \
                [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id.startswith("__") and name.id.endswith("__") \
                            and name.id not in CLASS_DUNDERS:
                        self.guard.refuse("tampering", f"class {node.name} binds {name.id}")
        self.generic_visit(node)
        return node


def guarded(statement: ast.stmt, guard: Guard) -> ast.Module:
    """One top-level statement of student code, rewritten; Refused when it cannot run at all."""
    module = ast.Module(body=[GuardedAccess(guard).visit(statement)], type_ignores=[])
    return ast.fix_missing_locations(module)


def future_flags(statement: ast.stmt) -> int:
    """The compiler flags a `from __future__ import ...` statement turns on (0 for any other statement)."""
    if not (isinstance(statement, ast.ImportFrom) and statement.module == "__future__"):
        return 0
    features = (getattr(__future__, alias.name, None) for alias in statement.names)
    return sum({feature.compiler_flag for feature in features if isinstance(feature, __future__._Feature)})


def compiled(statement: ast.stmt, guard: Guard | None, flags: int, filename: str) -> types.CodeType:
    """One top-level statement of student code as code to run. Each statement is compiled on its own, so the
    `__future__` features of the statements before it (`flags`) are passed on explicitly, as Python does within
    one file and IPython from cell to cell; dont_inherit keeps the grader's own features out."""
    module = guarded(statement, guard) if guard else ast.Module(body=[statement], type_ignores=[])
    return compile(module, filename, "exec", flags=flags, dont_inherit=True)
