"""Which parts an edit of the fix search can reach: a regrade runs only their checks (grader.grade.Grading.regrade).

Read from the code, before and after the edit: each changed line lies in one top-level definition (a function or a
class, its decorators included) or in code that runs when the module loads. A part reaches its graded name and,
through the names each definition uses, every definition it can call. An edit reaches a part when its definition is
among those; it reaches every part when it lies outside any definition, or in a definition that code run at load
names (that code may call it, and what it leaves behind is shared), or whose object code run at load is handed: a
decorator's or a metaclass's (of the class or of a method in it), which may keep it where any part reads it (a
registry that Part 2 calls Part 1 through; red team on issue 42: a fix verified by the spliced regrade lost points
when the whole file was graded).

State a definition writes into is shared: where one stores into a module-level variable or a class, or calls a
method of one (`STATE["attend"] = ...`, `CACHE.append(...)`, `MultiHeadAttention.scale = ...`), every definition that
reads it reaches every other, since the checks of one part see what another part's checks left there in the worker
(and see nothing where that part's checks did not run).

Reading less than the whole program is safe here: a part the edit cannot reach keeps the original's verdict, so its
points are the original's and a fix earns no credit there (grader.fixes.credit is per part); the checks of the parts
it reaches run afresh and decide whether the fix helps.
"""
from __future__ import annotations

import ast
import difflib


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def parts_reached(before: str, after: str, graded_name: dict[str, str]) -> set[str]:
    """The ids of the parts (`graded_name`: part id -> the name it grades) whose behaviour the change from `before` to
    `after` can alter (all of them where either text does not parse)."""
    every = set(graded_name)
    old_lines, new_lines = before.splitlines(), after.splitlines()
    changed_old, changed_new = set(), set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False).get_opcodes():
        if tag != "equal":  # an insertion changes the code around its place: the line before it and after it count
            changed_old.update(range(i1 + 1, i2 + 1) if i2 > i1 else (i1, i1 + 1))
            changed_new.update(range(j1 + 1, j2 + 1) if j2 > j1 else (j1, j1 + 1))
    reached: set[str] = set()
    for text, changed in ((before, changed_old), (after, changed_new)):
        if changed:
            reached |= _reached_in(text, changed, graded_name)
    return reached


def _reached_in(text: str, changed: set[int], graded_name: dict[str, str]) -> set[str]:
    every = set(graded_name)
    try:
        module = ast.parse(text)
    except SyntaxError:
        return every
    spans: dict[str, tuple[int, int]] = {}  # definition name -> its first and last line
    uses: dict[str, set[str]] = {}  # definition name -> the names it reads
    at_load: set[str] = set()  # names read by code that runs when the module loads
    variables: set[str] = set()  # bound by code run at load (an import is not: a module's state is not the hand-in's)
    writes: dict[str, set[str]] = {}  # definition name -> the top-level names it may change the object of
    for node in module.body:
        if isinstance(node, DEFINITIONS):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            spans[node.name] = (first, node.end_lineno or node.lineno)
            uses[node.name] = _names(node)
            writes[node.name] = _written(node)
            if _handed_over_at_load(node):
                at_load.add(node.name)
        else:
            at_load |= _names(node)
            variables |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    reads = {name: set(read) for name, read in uses.items()}
    for target in set().union(*writes.values()) & (variables | set(spans)):  # state one definition writes into
        uses.setdefault(target, set()).update(name for name, read in reads.items() if target in read)
    edited, lines = set(), len(text.splitlines())
    for line in changed:
        owner = next((name for name, (first, last) in spans.items() if first <= line <= last), None)
        if owner is None:
            if 1 <= line <= lines:  # a changed line outside every definition runs at load
                return every
            continue
        edited.add(owner)
    if edited & at_load:
        return every
    return {part for part, name in graded_name.items() if edited & _closure(name, uses)}


def _handed_over_at_load(node: ast.AST) -> bool:
    """Whether code run at load receives the definition's object (or a method's, for a class): a decorator, or a
    metaclass and its keywords."""
    if node.decorator_list or getattr(node, "keywords", None):
        return True
    return isinstance(node, ast.ClassDef) and any(isinstance(item, DEFINITIONS) and _handed_over_at_load(item)
                                                  for item in node.body)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _written(node: ast.AST) -> set[str]:
    """The names whose objects `node` may change: stored into (`X[k] = `, `X.a = `, `del X.a`), a method called on
    (`X.append(...)`), or declared `global`."""
    written = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Global):
            written.update(n.names)
        elif isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            written.add(_root(n))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            written.add(_root(n.func))
    written.discard(None)
    return written


def _root(node: ast.expr) -> str | None:
    """The name an attribute or item chain starts from (`STATE` of `STATE["a"].b`), None if it starts elsewhere."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _closure(name: str, uses: dict[str, set[str]]) -> set[str]:
    """`name` and every top-level definition it can reach through the names it reads."""
    seen, pending = set(), [name]
    while pending:
        current = pending.pop()
        if current in seen or current not in uses:
            continue
        seen.add(current)
        pending.extend(uses[current])
    return seen
