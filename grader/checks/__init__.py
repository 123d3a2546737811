"""Checks: behavioural tests of the student's code, each with its grading metadata beside it.

`@check(...)` only records id, part, points and visibility (like gradescope-utils' @weight);
the reporting layer reads them. A check takes a `Context` and returns an `Outcome`; it reaches
student code only through `ctx.student` (the adapter) and computes its verdict here, in the
trusted parent, against float64 references.

Each part of an exercise (grader.exercises) has one package here named after the part's id
(`grader.checks.sdpa`); what the parts share is in `common` and `gates`, and no part imports another.
"""
from __future__ import annotations

import importlib
import importlib.util
import random
from dataclasses import dataclass, field
from typing import Callable

import torch

from grader.checks import secret as grading_secret
from grader.checks.student_code import StudentCode
from grader.exercises import Exercise, every_part, of_part
from grader.rules import Violation
from grader.errors import NoGraders

PARTS = {part.id: part.label for part in every_part()}  # part id -> its heading


@dataclass
class Outcome:
    passed: bool
    zh: str = ""  # what property held or failed, with numbers; the catalog explains the mistakes
    en: str = ""
    mistakes: list[str] = field(default_factory=list)
    where: dict | None = None  # the line of student code involved
    figure: dict | None = None  # {"student": [[...]], "expected": [[...]]}: one attention matrix each, to draw
    advice: list[str] = field(default_factory=list)  # mistake ids explained without costing points
    cause: str = ""  # "values" (numbers differ from the reference), "forward" (so did a gradient probe's forward) or
    # "error:<type>:<ids>": see common.needs_correct_values
    error: str = ""  # the exception the student's code raised, as one line: a report quotes it once (report.repeated_messages)


@dataclass(frozen=True)
class Check:
    id: str
    part: str
    points: float
    visibility: str  # "public" (also run by the exercises' self-check) or "hidden"
    title_zh: str
    title_en: str
    run: Callable[["Context"], Outcome]
    gate: bool = False  # failing a gate zeroes its whole part (forbidden APIs, rules broken, no attention)


REGISTRY: list[Check] = []


def check(id: str, *, part: str, points: float, visibility: str, title_zh: str, title_en: str, gate: bool = False):
    def register(function: Callable[["Context"], Outcome]):
        def run(ctx: "Context") -> Outcome:
            outcome = function(ctx)
            ctx.outcomes[id] = outcome  # a later check may depend on it (common.needs_correct_values)
            if not outcome.passed and outcome.where is None:
                outcome.where = ctx.evidence_line(outcome.mistakes)
            return outcome

        REGISTRY.append(Check(id, part, points, visibility, title_zh, title_en, run, gate))
        return function

    return register


@dataclass
class Context:
    student: StudentCode
    static: dict  # mistake id -> places, from static_pass.analyse
    cuda: bool  # run the real-CUDA variants too
    violations: list[Violation] = field(default_factory=list)  # grading rules broken, from rules.violations
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # check id -> outcome, for the checks run so far
    probed: dict[str, list] = field(default_factory=dict)  # part -> its shape probe's results, computed once
    secret: int = field(default_factory=grading_secret.draw, repr=False)  # this grading's own (checks.secret)

    def evidence_line(self, mistakes: list[str]) -> dict | None:
        """The student's line the text shows a mistake on (static analysis), to quote where a check named it
        from behaviour alone (wrong numbers or shapes, no exception to point at)."""
        for mistake in mistakes:
            for place in self.static.get(mistake, [])[:1]:
                return self.student.submission.locate({"line": place["line"], "text": place["text"],
                                                       "function": "<module>"})
        return None

    def generator(self, label: int) -> torch.Generator:
        """The generator of a check's inputs numbered `label`: the same label twice in one grading draws the same
        values, and no two gradings draw the same (checks.secret)."""
        return torch.Generator().manual_seed(grading_secret.seed(self.secret, "inputs", label))

    def sizes(self, label: str, *choices: range) -> tuple[int, ...]:
        """One size from each of `choices` for the probe `label`, drawn per grading like its values (checks.secret):
        a probe whose verdict code could steer by the shape it is called at (the device, the op count, the dropout
        pattern) runs at sizes written nowhere, so code cannot behave well at the grader's shapes alone."""
        draw = random.Random(grading_secret.seed(self.secret, "shapes", label))
        return tuple(draw.choice(choice) for choice in choices)

    def seed(self, label: int) -> int:
        """The seed numbered `label` in this grading for a graph's own draws (its dropout), which the parent makes
        when it runs the graph; another stream than the inputs' of the same number."""
        return grading_secret.seed(self.secret, "draws", label)


def passed(zh: str = "", en: str = "") -> Outcome:
    return Outcome(True, zh, en)


def failed(zh: str, en: str, mistakes: list[str] | tuple = (), where: dict | None = None) -> Outcome:
    return Outcome(False, zh, en, [m for m in dict.fromkeys(mistakes) if m], where)


def checks_for(part: str | None = None, visibility: str | None = None, *, exercise: Exercise | None = None) -> list[Check]:
    """The checks of `exercise`, or of the exercise `part` belongs to, in the order of its declared parts, each part's
    in its package's ORDER (data, so the order in which modules happen to be imported never changes which outcome a
    check can read)."""
    if exercise is None and part is None:
        raise TypeError("checks_for needs an exercise or a part")
    exercise = exercise or of_part(part)
    missing = [p.id for p in exercise.parts if importlib.util.find_spec(f"grader.checks.{p.id}") is None]
    if missing and (part is None or part in missing):
        raise NoGraders(f"the exercise {exercise.name!r} has no hidden graders yet for "
                        f"{', '.join(f'grader/checks/{each}/' for each in missing)}")
    ordered = []
    # a part's checks alone import that part's package alone: a part with graders is graded while the exercise's other
    # parts have none yet, and the whole exercise is refused (NoGraders) until they all have
    for declared in [each for each in exercise.parts if (part is None or each.id == part) and each.id not in missing]:
        package = importlib.import_module(f"grader.checks.{declared.id}")  # importing registers its checks
        registered = {c.id: c for c in REGISTRY if c.part == declared.id}
        if set(registered) != set(package.ORDER):
            raise RuntimeError(f"grader.checks.{declared.id}.ORDER lists {sorted(package.ORDER)}, "
                               f"the package registers {sorted(registered)}")
        ordered += [registered[check_id] for check_id in package.ORDER]
    return [c for c in ordered if (part is None or c.part == part) and (visibility is None or c.visibility == visibility)]
