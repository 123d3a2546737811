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
# The notebook's provided cells (imports, ModelArgs): a notebook that lost them is still graded on its
# code. They come first, so the student's own definitions, if any, take precedence.
PROVIDED_CELLS = [
    "import math, torch, torch.nn as nn, torch.nn.functional as F; from dataclasses import dataclass",
    "@dataclass",
    "class ModelArgs: dim: int = 64; n_heads: int = 4; dropout: float = 0.0; max_seq_len: int = 256",
]

_MAGIC_LINE = re.compile(r"^\s*[%!]")
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# statements that may bind a name a definition needs; loops, prints and test calls never do
_MAY_DEFINE = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.If, ast.Try)


@dataclass
class Submission:
    """The text of one submission, ready to send to the sandbox."""

    path: str
    source: str  # the extracted module the sandbox executes (dropped lines blanked, numbering kept)
    syntax_errors: list[dict] = field(default_factory=list)
    origin: list[tuple[int, int]] = field(default_factory=list)  # module line - 1 -> (cell, line in cell)
    is_notebook: bool = False

    def locate(self, where: dict | None) -> dict | None:
        """Turn a line of the executed module into the student's own cell and line."""
        if not where or where.get("located") or not where.get("line") or not 0 < where["line"] <= len(self.origin):
            return where
        cell, line = self.origin[where["line"] - 1]
        if cell < 0:  # the provided imports the grader adds
            return {**where, "line": 0}
        return {**where, "cell": cell + 1, "line": line} if self.is_notebook else {**where, "line": line}


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


# Cell magics whose body is still Python (`%%time` over the graded cell, say); any other cell
# magic (%%bash, %%writefile, %%html, …) makes the whole cell something else.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}


def strip_magics(cell: str) -> str:
    """Blank out IPython magics and shell escapes, which are not Python; lines keep their numbers."""
    stripped = cell.lstrip()
    if stripped.startswith("%%") and stripped[2:].split(maxsplit=1)[:1] and \
            stripped[2:].split(maxsplit=1)[0] not in PYTHON_CELL_MAGICS:
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


def _loads(node: ast.AST) -> set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def _local_names(function: ast.AST) -> set[str]:
    """Parameters and names assigned anywhere inside a function (a coarse but safe local set)."""
    names = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    for sub in ast.walk(function):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not function:
            names.add(sub.name)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
    globals_declared = {n for sub in ast.walk(function) if isinstance(sub, ast.Global) for n in sub.names}
    return names - globals_declared


def _used_names(node: ast.AST) -> set[str]:
    """Module-level names a statement reads: a function's own locals are not module names."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        outer = set()
        for part in node.decorator_list + node.args.defaults + node.args.kw_defaults + [node.returns]:
            if part is not None:
                outer |= _loads(part)
        for arg in ast.walk(node.args):
            if isinstance(arg, ast.arg) and arg.annotation is not None:
                outer |= _loads(arg.annotation)
        return outer | (_loads(node) - _local_names(node))
    if isinstance(node, ast.ClassDef):
        used = set()
        for part in node.bases + node.keywords + node.decorator_list:
            used |= _loads(part)
        for statement in node.body:
            used |= _used_names(statement)
        return used
    return _loads(node)


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
            if not kept[i] and isinstance(statement, _MAY_DEFINE) and _bound_names(statement) & needed:
                kept[i] = True
                needed |= _used_names(statement)
                changed = True
    return [s for s, keep in zip(statements, kept) if keep]


def load_submission(path: str | Path) -> Submission:
    path = Path(path)
    return submission_from_cells(read_code_cells(path), str(path), is_notebook=path.suffix == ".ipynb")


def submission_from_cells(cells: list[str], path: str, is_notebook: bool = True) -> Submission:
    """Parse each cell separately so that one broken cell does not hide the others.

    The module sent to the sandbox keeps every cell's lines in place and blanks the dropped
    ones, so a line number in an error maps straight back to (cell, line) in the student's file.
    """
    cells = [strip_magics(cell) for cell in cells]
    statements: list[ast.stmt] = []
    spans: dict[int, tuple[int, int]] = {}  # id(statement) -> (first, last) line in the whole module
    origin: list[tuple[int, int]] = [(-1, 0)] * len(PROVIDED_CELLS)  # module line - 1 -> (cell, line in cell)
    module_lines: list[str] = list(PROVIDED_CELLS)
    syntax_errors = []
    for index, cell in enumerate(cells):
        lines = cell.splitlines() or [""]
        offset = len(module_lines)
        module_lines += lines
        origin += [(index, n) for n in range(1, len(lines) + 1)]
        try:
            tree = ast.parse(cell)
        except SyntaxError as error:
            syntax_errors.append(
                {"cell": index, "line": error.lineno, "type": type(error).__name__, "message": error.msg,
                 "text": (error.text or "").rstrip()}
            )
            continue
        for statement in tree.body:
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            spans[id(statement)] = (offset + first, offset + statement.end_lineno)
        statements.extend(tree.body)
    keep_lines = set()
    for statement in extract_definitions(statements):
        first, last = spans[id(statement)]
        keep_lines.update(range(first, last + 1))
    provided = len(PROVIDED_CELLS)
    source = "\n".join(line if n in keep_lines or n <= provided else "" for n, line in enumerate(module_lines, start=1))
    return Submission(
        path=path,
        source=source + "\n",
        syntax_errors=syntax_errors,
        origin=origin,
        is_notebook=is_notebook,
    )
