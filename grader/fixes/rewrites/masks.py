"""Fix rewrites for the causal mask: its diagonal, its dtype, its device, keeping it as a buffer, and asking whether
there is one (not whether its values are true)."""
from __future__ import annotations

import ast

from grader.fixes.rewrites.splices import (Assignments, Splice, assignments_in, call_name, functions, input_name,
                                           last_assigned, one_line, replace, segment, self_attribute)
from grader.static_pass import CREATION_FUNCTIONS, DEVICE_STRINGS


def mask_diagonal(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`triu(x)` / `triu(x, diagonal=0)` -> `diagonal=1`; `tril(x, diagonal=-1)` -> `diagonal=0`; an offset the code
    computes, `triu(x, diagonal=start_pos)` -> `diagonal=start_pos + 1`."""
    splices = []
    for n in ast.walk(graded):
        if not (isinstance(n, ast.Call) and call_name(n) in ("triu", "tril") and one_line(n)):
            continue
        right = "1" if call_name(n) == "triu" else "0"
        method = isinstance(n.func, ast.Attribute) and not (isinstance(n.func.value, ast.Name)
                                                             and n.func.value.id == "torch")
        given = next((k.value for k in n.keywords if k.arg == "diagonal"), None)
        if given is None and len(n.args) > (0 if method else 1):
            given = n.args[0 if method else 1]
        if _literal(given) and segment(lines, given) != right:
            splices.append(replace(given, right))
        elif given is not None and not _literal(given):
            # an offset the code computes (`diagonal=start_pos` with a cache): the diagonal is one further, whatever
            # the offset; `diagonal=1` in its place would unmask the cache and the future of every later chunk
            text = segment(lines, given)
            splices.append(replace(given, f"{text} + 1" if isinstance(given, (ast.Name, ast.Attribute))
                                   else f"({text}) + 1"))
        elif given is None and right == "1":
            splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                  (", " if n.args or n.keywords else "") + "diagonal=1"))
    return splices


def _literal(node: ast.AST | None) -> bool:
    """A number written out (`0`, `-1`), not one the code computes."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant)


def _buffer_value(graded: ast.AST, attribute: str) -> ast.AST | None:
    """What `self.<attribute>` was made from in the graded class: `register_buffer("<attribute>", X)` or
    `self.<attribute> = X`, with a name X resolved to its last assignment in that method."""
    for function in functions(graded):
        for n in ast.walk(function):
            value = None
            if isinstance(n, ast.Call) and call_name(n) == "register_buffer" and len(n.args) >= 2 \
                    and isinstance(n.args[0], ast.Constant) and n.args[0].value == attribute:
                value = n.args[1]
            elif isinstance(n, ast.Assign) and any(self_attribute(t) == attribute for t in n.targets):
                value = n.value
            if isinstance(value, ast.Name):
                value = last_assigned(assignments_in(function), value.id, n.lineno) or value
            if value is not None:
                return value
    return None


def _marks_kept_positions(mask: ast.AST, assignments: Assignments, graded: ast.AST) -> bool | None:
    """Whether a 0/1 mask marks the positions to keep (built with tril) or to hide (triu); None: cannot tell."""
    origin = last_assigned(assignments, mask.id, mask.lineno) if isinstance(mask, ast.Name) else mask
    base = origin if origin is not None else mask
    while isinstance(base, ast.Subscript):  # self.mask[:, :, :T, :T]
        base = base.value
    if self_attribute(base):
        base = _buffer_value(graded, self_attribute(base)) or base
    made_by = {call_name(n) for n in ast.walk(base) if isinstance(n, ast.Call)}
    if ("tril" in made_by) != ("triu" in made_by):
        return "tril" in made_by
    return None


def mask_not_bool(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """A 0/1 mask given to `masked_fill` / `torch.where` made boolean with the meaning the call needs:
    masked_fill hides where the mask is true (`keep == 0` for a tril keep-mask, `.bool()` otherwise),
    torch.where keeps where it is true (`hide == 0` for a triu mask, `.bool()` otherwise)."""
    splices = []
    for function in functions(graded):
        assignments = assignments_in(function)
        for n in ast.walk(function):
            if not (isinstance(n, ast.Call) and one_line(n)):
                continue
            if call_name(n) == "masked_fill" and isinstance(n.func, ast.Attribute) and n.args:
                mask, hides = n.args[0], True
            elif call_name(n) == "where" and len(n.args) == 3:
                mask, hides = n.args[0], False
            else:
                continue
            if isinstance(mask, ast.Compare) or not one_line(mask):
                continue
            kept = _marks_kept_positions(mask, assignments, graded)
            text = segment(lines, mask)
            atom = isinstance(mask, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))
            if kept is not None and kept == hides:  # the mask means the opposite of what the call needs
                splices.append(replace(mask, f"{text} == 0"))
            else:
                splices.append(replace(mask, f"{text if atom else f'({text})'}.bool()"))
    return splices


def mask_device(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`torch.ones(T, T)` built in a call -> `torch.ones(T, T, device=Q.device)` (Q: the input)."""
    splices = []
    for function in functions(graded):
        source = input_name(function)
        if source is None:
            continue
        for n in ast.walk(function):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in CREATION_FUNCTIONS \
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == "torch" and one_line(n) \
                    and not any(k.arg == "device" for k in n.keywords):
                splices.append(Splice(n.lineno, n.end_col_offset - 1, n.end_col_offset - 1,
                                      (", " if n.args or n.keywords else "") + f"device={source}.device"))
    return splices


def _tensor_made_in(assignments: Assignments, value: ast.AST, line: int) -> bool:
    """A tensor creation (or triu/tril), directly or through a name last assigned one."""
    if isinstance(value, ast.Name):
        value = last_assigned(assignments, value.id, line)
    return value is not None and any(isinstance(c, ast.Call) and call_name(c) in CREATION_FUNCTIONS | {"triu", "tril"}
                                     for c in ast.walk(value))


def hardcoded_device(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`device="cuda"` or `device=<a module-level device>` -> `device=Q.device`; `.cuda()` and `.to("cpu")`
    -> `.to(Q.device)`, inside a call with an input Q to follow."""
    splices = []
    for function in functions(graded):
        source = input_name(function)
        if source is None:
            continue
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)} | {
            t.id for a in ast.walk(function) if isinstance(a, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}
        # `.cpu().numpy()` reads values on the CPU as it must on a GPU too: that copy is no device mistake
        read_on_the_cpu = {id(a.value) for a in ast.walk(function) if isinstance(a, ast.Attribute)
                           and a.attr in ("numpy", "tolist", "item")}
        for n in ast.walk(function):
            fixed_device = isinstance(n, ast.keyword) and n.arg == "device" and (
                isinstance(n.value, ast.Constant) and n.value.value in DEVICE_STRINGS
                or isinstance(n.value, ast.Name) and n.value.id not in local)
            if fixed_device and one_line(n.value):
                splices.append(replace(n.value, f"{source}.device"))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("cuda", "cpu") \
                    and not n.args and not n.keywords and one_line(n) and id(n) not in read_on_the_cpu:
                start = n.func.value.end_col_offset
                splices.append(Splice(n.lineno, start, n.end_col_offset, f".to({source}.device)"))
            elif isinstance(n, ast.Call) and call_name(n) == "to" and len(n.args) == 1 and not n.keywords \
                    and isinstance(n.args[0], ast.Constant) and n.args[0].value in DEVICE_STRINGS and one_line(n):
                splices.append(replace(n.args[0], f"{source}.device"))
    return splices


def mask_not_buffer(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`self.mask = torch.triu(...)` (or a name holding it) in __init__ -> `self.register_buffer("mask", ...)`; and a
    mask made at the first call, `self.mask = None` in __init__ -> `self.register_buffer("mask", None)`: what forward
    later assigns to a buffer's name is a buffer, and moves with the module."""
    splices = []
    made_later = {self_attribute(target) for function in functions(graded) if function.name != "__init__"
                  for n in ast.walk(function) if isinstance(n, ast.Assign) for target in n.targets}
    for function in functions(graded):
        if function.name != "__init__":
            continue
        assignments = assignments_in(function)
        for n in ast.walk(function):
            if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and self_attribute(n.targets[0]) and one_line(n)):
                continue
            if _tensor_made_in(assignments, n.value, n.lineno):
                text = f'self.register_buffer("{n.targets[0].attr}", {segment(lines, n.value)})'
                splices.append(Splice(n.lineno, n.col_offset, n.end_col_offset, text))
            elif isinstance(n.value, ast.Constant) and n.value.value is None and n.targets[0].attr in made_later \
                    and _mask_named(n.targets[0]):
                splices.append(Splice(n.lineno, n.col_offset, n.end_col_offset,
                                      f'self.register_buffer("{n.targets[0].attr}", None)'))
    return splices


MASK_WORDS = ("mask", "bias")


def _mask_named(node: ast.AST) -> bool:
    name = node.id if isinstance(node, ast.Name) else self_attribute(node) or ""
    return any(word in name.lower() for word in MASK_WORDS)


def tensor_truth_value(lines: list[bytes], graded: ast.AST) -> list[Splice]:
    """`if mask:` -> `if mask is not None:`, `not mask` -> `mask is None`: the question meant is whether a mask
    was given, and a tensor of several values has no single truth value."""
    splices = []
    for n in ast.walk(graded):
        tests = [n.test] if isinstance(n, (ast.If, ast.IfExp, ast.While)) else []
        for test in tests:
            if _mask_named(test) and one_line(test):
                splices.append(Splice(test.end_lineno, test.end_col_offset, test.end_col_offset, " is not None"))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not) and _mask_named(n.operand) and one_line(n):
            splices.append(replace(n, f"{segment(lines, n.operand)} is None"))
    return splices
