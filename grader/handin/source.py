"""Read a submission (.ipynb or .py) into the Python source the grader runs.

Notebooks come back from Colab in every state: cells reordered, duplicated, split, metadata
stripped, demo cells that crash or loop. Grading needs only the graded definitions and what
they depend on, so `extract_definitions` (definitions.py) keeps top-level imports, defs and classes, plus the
assignments those definitions reference, and drops everything else (prints, plots, test calls).
This module only reads text: it never executes submission code.

What is read is hostile too: a file is opened without following a link (and, in a class folder,
only if no folder on its way is a link), and sizes are capped before the work they bound, so a
hand-in costs this trusted process little time and memory whatever it holds. A hand-in that is a
link, over a cap, or not a notebook at all comes back as a `Submission` with a `refusal` (a catalog
mistake id and the details): it is not graded, scores 0, and its report says why.
"""
from __future__ import annotations

import ast
import errno
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grader.handin import parent_budget, syntax_tree
from grader.handin.cell_magics import strip_magics
from grader.handin.compile_decorators import imports_of, speed_up_lines
from grader.handin.definitions import extract_definitions
from grader.handin.notebook_version import NotebookVersionRefused, notebook_cells
from grader.exercises import Exercise
from grader.handin.exercise_of import exercise_of

# Caps, checked before the work they bound (reading, parsing), so that no hand-in makes this trusted
# process slow or big: what is over a cap is refused, scores 0, and says why (`submission-too-large`).
MAX_FILE_BYTES = 32 * 2**20
"""A notebook as Colab saves it, outputs included: a few MiB even with plots. Outputs are never graded,
so a file beyond this (a huge picture kept in an output) is not read at all."""
MAX_CODE_BYTES = 512 * 2**10
"""The code cells together (UTF-8): the exercise's answers are a few KiB."""
MAX_CODE_LINES = 20_000
"""The code cells' lines together, counted before parsing (a statement takes at least one line, but `;`)."""
MAX_STATEMENTS = 10_000
"""Top-level statements after parsing, which bounds the extraction's work (linear in them anyway)."""

@dataclass(frozen=True)
class Refusal:
    """Why a hand-in is not graded at all (a catalog mistake id), with the details in both languages."""

    mistake: str
    zh: str
    en: str


class SubmissionRefused(Exception):
    def __init__(self, mistake: str, zh: str, en: str) -> None:
        super().__init__(en)
        self.refusal = Refusal(mistake, zh, en)


@dataclass
class Submission:
    """The text of one submission, ready to send to the sandbox."""

    path: str
    source: str  # the extracted module the sandbox executes (dropped lines blanked, numbering kept)
    exercise: Exercise  # what it answers (grader.exercises): its parts, graded names and provided code
    syntax_errors: list[dict] = field(default_factory=list)
    origin: list[tuple[int, int]] = field(default_factory=list)  # module line - 1 -> (cell, line in cell)
    is_notebook: bool = False
    refusal: Refusal | None = None  # set when the hand-in is refused before any of it is parsed or run

    def locate(self, where: dict | None) -> dict | None:
        """Turn a line of the executed module into the student's own cell and line."""
        if not where or where.get("located") or not where.get("line") or not 0 < where["line"] <= len(self.origin):
            return where
        cell, line = self.origin[where["line"] - 1]
        if cell < 0:  # the provided imports the grader adds
            return {**where, "line": 0}
        if not self.is_notebook:
            return {**where, "line": line}
        defines = self.graded_name_in(cell)  # Colab numbers no cells: name the cell by what it defines
        return {**where, "cell": cell + 1, "line": line, **({"defines": defines} if defines else {})}

    def graded_name_in(self, cell: int) -> str | None:
        """The graded name the code cell `cell` (0-based) defines at top level, if any."""
        lines = self.source.splitlines()
        found = (self.exercise.graded_definition.match(lines[i]) for i, (c, _) in enumerate(self.origin) if c == cell and i < len(lines))
        return next((match.group(1) for match in found if match), None)


def read_capped(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes, opened without following a link.

    A link (O_NOFOLLOW: the kernel refuses it, so nothing it points at is ever opened), a FIFO or
    device (O_NONBLOCK: opening never waits), or a file over the cap is refused before it is read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise link_refused(path) from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionRefused("not-a-notebook", f"{path.name} 不是普通文件。",
                                    f"{path.name} is not a regular file.")
        data = handle.read(limit + 1) if info.st_size <= limit else b""
        if info.st_size > limit or len(data) > limit:
            raise too_large(f"文件超过 {limit // 2**20} MiB", f"the file is over {limit // 2**20} MiB")
    return data


def link_refused(path: Path) -> SubmissionRefused:
    return SubmissionRefused("submission-link", f"{path.name} 是一个链接（或位于被链接的文件夹中）。",
                             f"{path.name} is a link (or lies in a linked folder).")


def too_large(zh: str, en: str) -> SubmissionRefused:
    return SubmissionRefused("submission-too-large", zh + "。", en + ".")


def first_link_below(folder: Path, path: Path) -> Path | None:
    """The first component of `path` below `folder` that is a symbolic link, if any (lstat, never followed)."""
    current = folder
    for part in path.relative_to(folder).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def read_code_cells(path: Path) -> list[str]:
    """Code cells of a notebook, or the whole file of a .py, as a list of strings."""
    text = read_capped(path).decode("utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return [text]
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError):
        notebook = None
    if not isinstance(notebook, dict):
        raise SubmissionRefused("not-a-notebook", f"{path.name} 不是 JSON 格式的 notebook。",
                                f"{path.name} is not a notebook (no readable JSON).")
    try:
        cells, text_key = notebook_cells(notebook, path.name)
    except NotebookVersionRefused as refused:
        raise SubmissionRefused("not-a-notebook", refused.zh, refused.en) from None
    if not all(isinstance(cell, dict) for cell in cells) or (text_key == "source"
                                                            and not isinstance(notebook.get("cells"), list)):
        raise SubmissionRefused("not-a-notebook", f"{path.name} 不是 notebook：没有由单元格组成的列表。",
                                f"{path.name} is not a notebook (no list of cells).")
    code = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get(text_key, "")
        code.append("".join(map(str, source)) if isinstance(source, list) else str(source))
    return code


def load_submission(path: str | Path, *, folder: Path | None = None, exercise: Exercise | None = None) -> Submission:
    """Read a hand-in; one that cannot be read safely comes back with its `refusal` set.

    `folder`: the student's own folder; no component of `path` below it may be a link. `exercise`: what it answers,
    where the verb knows (an nbgrader assignment, `--exercise`); else read from its name and code (`exercise_of`).
    """
    path = Path(path)
    is_notebook = path.suffix == ".ipynb"
    try:
        if folder is not None and first_link_below(folder, path) is not None:
            raise link_refused(path)
        cells = read_code_cells(path)
    except SubmissionRefused as refused:
        return Submission(str(path), "", exercise or exercise_of(path, []), is_notebook=is_notebook,
                          refusal=refused.refusal)
    return submission_from_cells(cells, str(path), is_notebook=is_notebook, exercise=exercise)


def code_over_caps(cells: list[str]) -> SubmissionRefused | None:
    size = sum(len(cell.encode("utf-8", errors="replace")) for cell in cells)
    if size > MAX_CODE_BYTES:
        return too_large(f"代码共 {size // 1024} KiB，超过上限 {MAX_CODE_BYTES // 1024} KiB",
                         f"the code is {size // 1024} KiB, over the limit of {MAX_CODE_BYTES // 1024} KiB")
    lines = sum(cell.count("\n") + 1 for cell in cells)
    if lines > MAX_CODE_LINES:
        return too_large(f"代码共 {lines} 行，超过上限 {MAX_CODE_LINES} 行",
                         f"the code has {lines} lines, over the limit of {MAX_CODE_LINES}")
    return None


def submission_from_cells(cells: list[str], path: str, is_notebook: bool = True,
                          exercise: Exercise | None = None) -> Submission:
    """Parse each cell separately so that one broken cell does not hide the others. `exercise`: as `load_submission`.

    The module sent to the sandbox keeps every cell's lines in place and blanks the dropped
    ones, so a line number in an error maps straight back to (cell, line) in the student's file.
    """
    over = code_over_caps(cells)
    if over is not None:
        return Submission(path, "", exercise or exercise_of(path, []), is_notebook=is_notebook, refusal=over.refusal)
    with parent_budget.charged():
        exercise = exercise or exercise_of(path, cells)
        try:
            return _parsed(cells, path, is_notebook, exercise)
        except parent_budget.OverBudget as spent:
            return Submission(path, "", exercise, is_notebook=is_notebook,
                              refusal=Refusal(spent.mistake, spent.zh, spent.en))


def _parsed(cells: list[str], path: str, is_notebook: bool, exercise: Exercise) -> Submission:
    if is_notebook:  # a .py file is Python throughout: a line starting with `%` there is an operator's
        cells = [strip_magics(cell) for cell in cells]
    statements: list[ast.stmt] = []
    spans: dict[int, tuple[int, int]] = {}  # id(statement) -> (first, last) line in the whole module
    offsets: dict[int, int] = {}  # id(statement) -> the module lines before its cell
    provided = len(exercise.provided_code)
    origin: list[tuple[int, int]] = [(-1, 0)] * provided  # module line - 1 -> (cell, line in cell)
    module_lines: list[str] = list(exercise.provided_code)
    syntax_errors = []
    for index, cell in enumerate(cells):
        parent_budget.check()
        lines = cell.splitlines() or [""]
        offset = len(module_lines)
        module_lines += lines
        origin += [(index, n) for n in range(1, len(lines) + 1)]
        try:
            tree = syntax_tree.parse(cell)
        except SyntaxError as error:
            syntax_errors.append(
                {"cell": index, "line": error.lineno, "type": type(error).__name__, "message": error.msg,
                 "text": (error.text or "").rstrip()}
            )
            continue
        except (ValueError, RecursionError, MemoryError) as error:  # null bytes; nesting beyond the parser's stack
            syntax_errors.append({"cell": index, "line": 1, "type": "SyntaxError",
                                  "message": str(error)[:200] or f"{type(error).__name__}: nested too deeply to parse",
                                  "text": ""})
            continue
        for statement in tree.body:
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            spans[id(statement)] = (offset + first, offset + statement.end_lineno)
            offsets[id(statement)] = offset
        statements.extend(tree.body)
        if len(statements) > MAX_STATEMENTS:
            refused = too_large(f"代码的顶层语句超过 {MAX_STATEMENTS} 条",
                                f"the code has over {MAX_STATEMENTS} top-level statements")
            return Submission(path, "", exercise, is_notebook=is_notebook, refusal=refused.refusal)
    parent_budget.check()
    keep_lines = set()
    imports = imports_of(syntax_tree.parse(exercise.imports).body + statements)
    for statement in extract_definitions(statements, exercise.graded_names):
        first, last = spans[id(statement)]
        keep_lines.update(range(first, last + 1))
        keep_lines -= {offsets[id(statement)] + line for line in speed_up_lines(statement, imports)}
    source = "\n".join(line if n in keep_lines or n <= provided else "" for n, line in enumerate(module_lines, start=1))
    return Submission(
        path=path,
        source=source + "\n",
        exercise=exercise,
        syntax_errors=syntax_errors,
        origin=origin,
        is_notebook=is_notebook,
    )
