"""Which exercise a hand-in answers, where the verb was not told: first the file's own name, then its code.

The name is the assignment's as Colab and the LMS leave it (`Copy of kv_cache (2).ipynb`, `alice_kv_cache.ipynb`,
`s1_Copy of kv_cache (1).ipynb`): the whole name, or what follows one of its `_`, read back by `newest.notebook_stem`,
is an exercise's name. A name that says nothing (`homework.py`) leaves it to the code: the exercise whose graded names the code defines at top
level the most of. Text only: nothing of the hand-in runs.
"""
from __future__ import annotations

from pathlib import Path

from grader.exercises import Exercise, exercises
from grader.handin.newest import notebook_stem


def exercise_of(path: str | Path, cells: list[str]) -> Exercise:
    declared = exercises()
    by_name = {each.name: each for each in declared}
    name = Path(path).name.removesuffix(".py")
    for tail in [name] + [name[at + 1:] for at, char in enumerate(name) if char == "_"]:  # the longest first
        stem = notebook_stem(tail)[0].lower()
        if stem in by_name:
            return by_name[stem]
    code = "\n".join(cells)
    defined = {each.name: len({match.group(1) for match in each.graded_definition.finditer(code)}) for each in declared}
    return max(declared, key=lambda each: defined[each.name])  # the first declared where the code says nothing
