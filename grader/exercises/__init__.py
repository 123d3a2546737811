"""The exercises, each declared once in a module of its own (`grader/exercises/<name>`): what its notebook asks
for and how it is graded.

Torch-free on purpose: the nbgrader plugins, the source reader and the build read the declarations without
loading PyTorch. An exercise is found by its assignment's name (`exercise("attention")`), the name nbgrader,
`source/<name>/`, `release/<name>/` and the hand-ins' file names use. Adding one: docs/developing.md,
"Adding an exercise".
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    id: str  # prefix of its check ids (`sdpa.values`) and its probes
    number: int
    graded_name: str  # the one name the student defines for it (a function or a class)
    title: str
    solution_cell: str  # nbgrader grade_id of the cell holding the student's code
    tests_cell: str  # nbgrader grade_id of its autograder cell (the hidden graders run there)
    points: float
    marker: str  # pytest marker of its public self-check and its hidden graders

    @property
    def label(self) -> str:
        return f"Part {self.number} · {self.graded_name}"


@dataclass(frozen=True)
class Exercise:
    name: str  # the assignment's name: source/<name>/<name>.ipynb, release/<name>/, nbgrader's assignment id
    parts: tuple[Part, ...]
    provided_cells: tuple[str, ...]  # grade_ids of the notebook's locked, provided cells, in order
    imports: str  # what the provided imports cell binds, as one line of Python
    provided_code: tuple[str, ...]  # the provided code as lines put before every hand-in's (a notebook that lost its
    # provided cells is still graded on its code; the student's own definitions come later and take precedence)
    selfcheck_files: tuple[str, ...]  # its own public self-check files in source/<name>/, copied beside the
    # release (the pytest loader and test module every exercise shares come from source/selfcheck/)

    @property
    def source_notebook(self) -> str:
        return f"source/{self.name}/{self.name}.ipynb"

    @property
    def part(self) -> dict[str, Part]:
        return {part.id: part for part in self.parts}

    @property
    def part_ids(self) -> tuple[str, ...]:
        return tuple(part.id for part in self.parts)

    @property
    def graded_name(self) -> dict[str, str]:
        """Part id -> the name it grades."""
        return {part.id: part.graded_name for part in self.parts}

    @property
    def graded_names(self) -> tuple[str, ...]:
        return tuple(part.graded_name for part in self.parts)

    @property
    def graded_definition(self) -> re.Pattern:
        """A line that defines one of the graded names at top level (`def repeat_kv(`, `class KVCache:`); group 1
        is the name. Text only: how a hand-in is read without running it."""
        return re.compile(rf"^(?:def|class)\s+({'|'.join(map(re.escape, self.graded_names))})\b", re.M)

    @property
    def max_score(self) -> float:
        return sum(part.points for part in self.parts)


NAMES: tuple[str, ...] = ("attention", "kv_cache")
"""The declared exercises, in the order a course teaches them: each is the module `grader.exercises.<name>`,
whose `EXERCISE` is its declaration."""


def exercise(name: str) -> Exercise:
    if name not in NAMES:
        raise KeyError(f"no exercise named {name!r}; the declared ones are {', '.join(NAMES)}")
    return _DECLARATIONS[name]


def exercises() -> tuple[Exercise, ...]:
    return tuple(exercise(name) for name in NAMES)


def declared(name: str) -> Exercise | None:
    """The exercise named `name` (an nbgrader assignment's), or None where no exercise has that name."""
    return _DECLARATIONS.get(name)


def every_part() -> tuple[Part, ...]:
    """Every declared exercise's parts, in order: their ids, test cells and graded names are unique across exercises
    (a part id prefixes its check ids)."""
    return tuple(part for each in exercises() for part in each.parts)


def every_graded_name() -> tuple[str, ...]:
    return tuple(part.graded_name for part in every_part())


def of_part(part_id: str) -> Exercise:
    """The exercise a part belongs to."""
    found = [each for each in exercises() if part_id in each.part_ids]
    if not found:
        raise KeyError(f"no exercise declares a part {part_id!r}")
    return found[0]


_DECLARATIONS: dict[str, Exercise] = {name: importlib.import_module(f"{__name__}.{name}").EXERCISE for name in NAMES}
"""Every declaration, loaded with this package: a grading worker reads them after its confinement, where an import
fails (it ended the worker, and every part of an honest hand-in scored 0 as `tampering`)."""
