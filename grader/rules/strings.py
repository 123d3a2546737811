"""What a submission's string constants reach, read from the text: the fields of a format template, and the
places where a string meets a device's text (the only places the static reading looks for the stand-in's name).
"""
from __future__ import annotations

import _string
import ast
import re
import string
from typing import Callable

from grader.handin import syntax_tree

STAND_IN_WORD = re.compile(r"(?<![a-z])meta(?![a-z])|faketensor", re.I)
# where a string meets a device's text: the word above is looked for there only (an assert message may say "Meta")
DEVICE_ARGUMENT_CALLS = {"device", "to", "type"}
TEXT_MATCHING_CALLS = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "split", "rsplit",
                       "partition", "rpartition", "replace", "removeprefix", "removesuffix", "strip", "lstrip",
                       "rstrip", "__contains__", "__eq__", "__ne__"}
TEXT_MATCHING_MODULES = ("re.", "operator.")


def joins_strings(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)


def string_texts(node: ast.AST) -> list[str]:
    """The string an expression folds to, or else each string constant in it (`x + "meta"`). Linear in the
    expression: called once per top of an expression, whose pieces are skipped."""
    folded = folded_string(node)
    if folded is not None:
        return [folded]
    return [n.value for n in syntax_tree.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def folded_string(node: ast.AST) -> str | None:
    """The value of a string made only of constants ("me" + "ta", f"{'me'}ta"), else None. Iterative: a
    chain of N pieces is a tree N deep."""
    pieces, pending = [], [node]
    while pending:
        part = pending.pop()
        if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
            pending += [part.right, part.left]
        elif isinstance(part, ast.JoinedStr):
            pending += [v.value if isinstance(v, ast.FormattedValue) else v for v in reversed(part.values)]
        elif isinstance(part, ast.Constant) and isinstance(part.value, str):
            pieces.append(part.value)
        else:
            return None
    return "".join(pieces)


def format_fields(call: ast.Call) -> list[tuple[ast.AST, list[tuple[bool, str]]]]:
    """The fields of a constant `str.format`/`format_map` template (`"{0.device.type}".format(Q)`), each as the
    argument it starts from (or None) and its attribute (True) and item (False) keys: the worker reads them
    through its guard, as attributes written in the code."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("format", "format_map"):
        return []
    arguments = list(call.args)
    if isinstance(func.value, ast.Name) and func.value.id == "str" and arguments:
        template, arguments = folded_string(arguments[0]), arguments[1:]
    else:
        template = folded_string(func.value)
    if template is None:
        return []
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    fields, pending, automatic = [], [template], 0
    try:
        while pending:
            for _, name, spec, _ in string.Formatter().parse(pending.pop()):
                if spec:
                    pending.append(spec)  # "{0:{1.device}}": a nested field
                if name is None:
                    continue
                first, rest = _string.formatter_field_name_split(name)
                if first == "":
                    first, automatic = automatic, automatic + 1
                start = keywords.get(first) if isinstance(first, str) else \
                    arguments[first] if func.attr == "format" and first < len(arguments) else None
                fields.append((None if isinstance(start, ast.Starred) else start, list(rest)))
    except (ValueError, TypeError):  # a template str.format refuses: it raises before reading anything
        return fields
    return fields


def device_text_positions(statement: ast.AST, resolved: Callable[[ast.AST], str | None]) -> set[int]:
    """The nodes of a statement that can meet a device's text: operands of a comparison, a `device=` value, the
    arguments of `torch.device`, `.to`, `.type` and of text matching (`.startswith`, `re.search`, ...), a `case`
    value; with everything nested in them."""
    roots = set()
    for node in syntax_tree.walk(statement):
        if isinstance(node, ast.Compare):
            roots.update(id(operand) for operand in [node.left, *node.comparators])
        elif isinstance(node, ast.MatchValue):
            roots.add(id(node.value))
        elif isinstance(node, ast.Call):
            roots.update(id(k.value) for k in node.keywords if k.arg == "device")
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in DEVICE_ARGUMENT_CALLS or name in TEXT_MATCHING_CALLS \
                    or (resolved(func) or "").startswith(TEXT_MATCHING_MODULES):
                roots.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if name in TEXT_MATCHING_CALLS and isinstance(node.func, ast.Attribute):
                roots.add(id(node.func.value))  # "meta".startswith(...) matches the other way round
    inside, pending = set(), [(statement, False)]
    while pending:  # one pass down the tree: nested positions are not walked again
        node, within = pending.pop()
        within = within or id(node) in roots
        if within:
            inside.add(id(node))
        pending.extend((child, within) for child in ast.iter_child_nodes(node))
    return inside
