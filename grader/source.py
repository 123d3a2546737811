"""Read a submission (.ipynb or .py) into the Python source the grader runs.

Notebooks come back from Colab in every state: cells reordered, duplicated, split, metadata
stripped, demo cells that crash or loop. Grading needs only the graded definitions and what
they depend on, so `extract_definitions` keeps top-level imports, defs and classes, plus the
assignments those definitions reference, and drops everything else (prints, plots, test calls).
This module only reads text: it never executes submission code.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

GRADED_NAMES = ("scaled_dot_product_attention", "MultiHeadAttention")

_MAGIC_LINE = re.compile(r"^\s*[%!]")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Submission:
    """The text of one submission, ready to send to the sandbox."""

    path: str
    source: str  # the extracted module the sandbox executes
    full_source: str  # every code cell, for the static pass
    syntax_errors: list[dict] = field(default_factory=list)


def read_code_cells(path: Path) -> list[str]:
    """Code cells of a notebook, or the whole file of a .py, as a list of strings."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return [text]
    notebook = json.loads(text)
    cells = notebook.get("cells")
    if cells is None:  # nbformat 3 keeps cells inside worksheets
        cells = [c for ws in notebook.get("worksheets", []) for c in ws.get("cells", [])]
    code = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", cell.get("input", ""))
        code.append("".join(source) if isinstance(source, list) else str(source))
    return code


def strip_magics(cell: str) -> str:
    """Blank out IPython magics and shell escapes, which are not Python."""
    if cell.lstrip().startswith("%%"):
        return ""
    return "\n".join("" if _MAGIC_LINE.match(line) else line for line in cell.splitlines())


def _bound_names(node: ast.stmt) -> set[str]:
    names: set[str] = set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            names.add((alias.asname or alias.name).split(".")[0])
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(node.name)
    else:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(sub.name)
    return names


def _used_names(node: ast.AST) -> set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def extract_definitions(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Keep definitions and the assignments they need, in their original order.

    Defs and classes are always kept (defining them runs no student logic); imports and
    assignments are kept only if they bind a name that a kept statement reads, transitively,
    so a notebook's plotting imports or test calls never run in the grader.
    """
    kept = [isinstance(s, _DEFINITIONS) for s in statements]
    needed = set(GRADED_NAMES)
    for statement, keep in zip(statements, kept):
        if keep:
            needed |= _used_names(statement)
    changed = True
    while changed:
        changed = False
        for i, statement in enumerate(statements):
            if not kept[i] and _bound_names(statement) & needed and not isinstance(statement, ast.Expr):
                kept[i] = True
                needed |= _used_names(statement)
                changed = True
    return [s for s, keep in zip(statements, kept) if keep]


def load_submission(path: str | Path) -> Submission:
    """Parse each cell separately so that one broken cell does not hide the others."""
    path = Path(path)
    cells = [strip_magics(cell) for cell in read_code_cells(path)]
    statements: list[ast.stmt] = []
    texts: dict[int, str] = {}  # id(statement) -> its original lines, comments included
    syntax_errors = []
    for index, cell in enumerate(cells):
        try:
            tree = ast.parse(cell)
        except SyntaxError as error:
            syntax_errors.append(
                {"cell": index, "line": error.lineno, "message": f"{type(error).__name__}: {error.msg}",
                 "text": (error.text or "").rstrip()}
            )
            continue
        lines = cell.splitlines()
        for statement in tree.body:
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            texts[id(statement)] = "\n".join(lines[first - 1 : statement.end_lineno])
        statements.extend(tree.body)
    kept = extract_definitions(statements)
    return Submission(
        path=str(path),
        source="\n\n".join(texts[id(s)] for s in kept) + "\n",
        full_source="\n\n".join(cells),
        syntax_errors=syntax_errors,
    )
