"""Attribute writes a method makes on an object it was handed: bookkeeping, not tampering.

In the kv_cache lab the model is handed the student's own KVCache, and `cache.length = start_pos + T` in its forward
keeps a count on it, as `self.x = ...` keeps one on the module. The rules refuse an attribute write on anything but
`self` (`Rules._assignment`); this module names the writes taken as the method's own instead. A write counts only
where nothing can have swapped a shared object in for the parameter:
- the function is a method (its first parameter is `self`) and the object is one of its other parameters, with no
  default or a constant one (`F=torch.nn.functional` as a default would hand it torch), never rebound in the method;
- the attribute is public and no name torch, torch.nn, torch.nn.functional, a tensor, a module or `math` has: a
  torch module handed in by the student's own call (`self.helper(torch.nn.functional)`) cannot have its functions
  replaced this way, and a tensor's `data`, `grad` or `requires_grad` stay refused.
What such a write does at run time the worker's guards still see (a special attribute, a replaced torch function).
"""
from __future__ import annotations

import ast
import math

import torch

from grader.handin import syntax_tree

SHARED_NAMES = frozenset(name for space in (torch, torch.nn, torch.nn.functional, torch.Tensor, torch.nn.Module, math)
                         for name in dir(space))


def writes_to_parameters(nodes: list[ast.AST]) -> set[int]:
    """The ids of the `parameter.attribute` targets of the methods among `nodes` that are the method's own writes."""
    found: set[int] = set()
    for function in nodes:
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = function.args
        positional = arguments.posonlyargs + arguments.args
        if not positional or positional[0].arg != "self":
            continue
        defaults = {a.arg: d for a, d in syntax_tree.parameter_defaults(arguments)}
        handed = {a.arg for a in [*positional[1:], *arguments.kwonlyargs]
                  if a.arg not in defaults or isinstance(defaults[a.arg], ast.Constant)}
        body = list(_own_nodes(function))
        handed -= {n.id for n in body if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        found |= {id(n) for n in body if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                  and isinstance(n.value, ast.Name) and n.value.id in handed and _bookkeeping(n.attr)}
    return found


def _bookkeeping(name: str) -> bool:
    return not name.startswith("_") and name not in SHARED_NAMES


def _own_nodes(function: ast.AST):
    """The nodes of a function's body, without those of the functions, lambdas and classes defined in it (their
    parameters are theirs)."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                pending.append(child)
