"""The self-check files every exercise publishes alike (its pytest loader and test module), written once in
source/selfcheck/ and filled in with one exercise's names.

Students get only release/<name>/, so each exercise's copy stands alone; the template keeps the copies one source.
"""
from __future__ import annotations

from grader.build.config import ROOT
from grader.exercises import Exercise

SHARED_FOLDER = "source/selfcheck"


def shared_files(exercise: Exercise) -> dict[str, str]:
    """Published file name -> its template in source/selfcheck/."""
    return {"conftest.py": "conftest.py", f"test_{exercise.name}.py": "test_exercise.py"}


def part_markers(exercise: Exercise) -> str:
    """"`-m part1` or `-m part2`", "`-m part1`, `-m part2` or `-m part3`": how a student runs one part."""
    markers = [f"`-m {part.marker}`" for part in exercise.parts]
    return markers[0] if len(markers) == 1 else ", ".join(markers[:-1]) + " or " + markers[-1]


def placeholders(exercise: Exercise) -> dict[str, str]:
    return {"EXERCISE_NAME": exercise.name, "EXERCISE_IMPL": f"{exercise.name.upper()}_IMPL",
            "PART_MARKERS": part_markers(exercise)}


def shared_file(exercise: Exercise, published: str) -> bytes:
    """The template behind `published` (a name from shared_files) with the exercise's words in place."""
    text = (ROOT / SHARED_FOLDER / shared_files(exercise)[published]).read_text(encoding="utf-8")
    for placeholder, words in placeholders(exercise).items():
        text = text.replace(placeholder, words)
    return text.encode("utf-8")
