"""What the repair preprocessors compare against: the release notebook's nbgrader cells, and what a cell defines.

A cell is recognised by the names it binds at top level (the `def`s and `class`es, the imports,
the assignments), read from its text, never by running it. The release notebook of the course
(`release/<assignment>/<notebook>.ipynb`, written by `make build` or `nbgrader generate_assignment`)
says which cell holds which grade_id, in which order, with which nbgrader metadata.
"""
from __future__ import annotations

import ast

from grader.handin import syntax_tree
import copy
import difflib
import functools
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.coursedir import CourseDirectory

from grader.handin.cell_magics import strip_magics

_TOP_DEF = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)
_TOP_IMPORT = re.compile(r"^(?:import|from)\s", re.MULTILINE)
KIT_METADATA = "attention_kit"
"""The notebook metadata key under which the kit keeps its repairs and the grader's report."""


@dataclass(frozen=True)
class CellText:
    """What one code cell's text binds at top level."""

    parses: bool
    defined: frozenset[str]  # def / class names
    bound: frozenset[str]  # every top-level name: defs, imports, assignment targets


@functools.lru_cache(maxsize=256)  # the release cells, read for every notebook; a student's cell rarely recurs
def read_cell(source: str) -> CellText:
    """The names a cell's text binds; a cell that does not parse is read with a line pattern."""
    text = strip_magics(source)
    try:
        tree = syntax_tree.parse(text)
    except SyntaxError:
        defined = frozenset(_TOP_DEF.findall(text))
        # an unparseable cell binds what its def lines name, plus an unknown rest if it imports
        return CellText(False, defined, defined | ({"<import>"} if _TOP_IMPORT.search(text) else frozenset()))
    defined, bound = set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        else:
            bound |= {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}
    return CellText(True, frozenset(defined), frozenset(bound))


def similarity(a: str, b: str) -> float:
    """How alike two cell texts are, 0..1, ignoring blank lines and trailing spaces."""
    def lines(text: str) -> list[str]:
        return [line.rstrip() for line in text.splitlines() if line.strip()]

    return difflib.SequenceMatcher(None, lines(a), lines(b), autojunk=False).ratio()


def nbgrader_meta(cell: NotebookNode) -> dict:
    """A cell's nbgrader metadata; {} when missing or not a mapping (a hand-edited notebook)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True)
class ReleaseCell:
    """One cell of the release notebook that carries nbgrader metadata."""

    index: int  # position in the release notebook
    grade_id: str
    cell: NotebookNode  # the release cell itself (source, metadata)
    text: CellText

    @property
    def meta(self) -> dict:
        return nbgrader_meta(self.cell)

    @property
    def is_solution(self) -> bool:
        return bool(self.meta.get("solution"))

    @property
    def is_locked(self) -> bool:
        """Locked cells (provided code, autograder tests) are restored by nbgrader's OverwriteCells."""
        return not self.is_solution and bool(self.meta.get("locked") or self.meta.get("grade"))

    def pristine(self, nbformat_minor: int) -> NotebookNode:
        """A fresh copy of the release cell, as a cell of a notebook of the given nbformat 4 minor version."""
        cell = copy.deepcopy(self.cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        if nbformat_minor < 5:
            cell.pop("id", None)
        return cell


@dataclass(frozen=True)
class ReleaseNotebook:
    path: Path
    cells: tuple[ReleaseCell, ...]  # the nbgrader cells, in release order


def read_release(path: Path) -> ReleaseNotebook:
    nb = nbformat.read(path, as_version=4)
    cells = tuple(
        ReleaseCell(index, nbgrader_meta(cell)["grade_id"], cell, read_cell(cell.source))
        for index, cell in enumerate(nb.cells)
        if nbgrader_meta(cell).get("grade_id")
    )
    return ReleaseNotebook(path, cells)


def release_path(parent, resources: dict) -> Path:
    """The course's release notebook for the notebook being converted (course root from nbgrader's config)."""
    coursedir = CourseDirectory(parent=parent)
    assignment, notebook = resources["nbgrader"]["assignment"], resources["nbgrader"]["notebook"]
    folder = Path(coursedir.format_path(coursedir.release_directory, ".", assignment))
    return folder / f"{notebook}.ipynb"


def load_release(parent, resources: dict) -> ReleaseNotebook:
    path = release_path(parent, resources)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the repair of submitted notebooks compares them with the release notebook. "
            "Run `make build` (or `nbgrader generate_assignment`) first."
        )
    return read_release(path)


def kit_metadata(nb: NotebookNode) -> dict:
    """The notebook's `attention_kit` metadata (created empty when missing)."""
    if KIT_METADATA not in nb.metadata:
        nb.metadata[KIT_METADATA] = {}
    return nb.metadata[KIT_METADATA]


def note_repair(nb: NotebookNode, zh: str, en: str) -> None:
    """Remember a repair, so that the graded output can tell the student what was put back."""
    kit_metadata(nb).setdefault("repairs", []).append({"zh": zh, "en": en})
