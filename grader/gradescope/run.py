"""`python -m grader gradescope run`: what run_autograder does inside Gradescope's container.

Grades the one submission in `<root>/submission/` (Gradescope's root is /autograder; tests pass a
temporary tree of the same shape) with the hidden graders, in the sandbox as `grader grade` does, and
writes `<root>/results/results.json` (grader.gradescope.results) after grading, so nothing the student
code did to that folder survives. Gradescope runs the container as root, where namespaces or seccomp may
be refused: the worker then grades with the layers it has, and the missing ones go to an instructor-only test.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from grader import exercises
from grader.gradescope.results import instructor_log, no_submission, results_json
from grader.handin.newest import newest_key, notebook_stem

DEFAULT_ROOT = Path("/autograder")
FIX_CREDIT_ENV = "ATTENTION_KIT_FIX_CREDIT"
"""The fraction of a verified fix's points awarded (grade --fix-credit), set by `gradescope build` in run_autograder."""


def pick_submission(folder: Path, assignment: str) -> tuple[Path | None, list[str]]:
    """The file to grade, and every name seen: of the files named as the assignment's (Colab's decorations aside:
    `Copy of attention.ipynb`, `attention (1).ipynb`), else of the notebooks, else of the .py files, the newest by the
    rule the LMS collector keeps a student's newest with (grader.handin.newest)."""
    files = sorted(p for p in folder.rglob("*") if not p.name.startswith(".") and (p.is_file() or p.is_symlink())) \
        if folder.is_dir() else []
    gradable = [p for p in files if p.suffix in (".ipynb", ".py")]
    if not gradable:
        return None, [str(p.relative_to(folder)) for p in files]
    def preference(path: Path) -> tuple[bool, bool]:  # the assignment's name first, then a notebook before a .py
        own_name = notebook_stem(path.name if path.suffix == ".ipynb" else path.stem)[0]
        return own_name != assignment, path.suffix != ".ipynb"

    best = min(map(preference, gradable))
    chosen = max((p for p in gradable if preference(p) == best), key=newest_key)
    return chosen, [str(p.relative_to(folder)) for p in files]


def run_autograder(root: Path = DEFAULT_ROOT, *, exercise: exercises.Exercise, cache: Path | None = None, limits=None,
                   fix_credit: float = 0.0) -> dict:
    """Grade `<root>/submission` as a hand-in of `exercise`, write `<root>/results/results.json`, return what was
    written."""
    from grader.grade import grade_submission  # here: torch loads after the entry point's fork server

    submission, seen = pick_submission(root / "submission", exercise.name)
    if submission is None:
        results = no_submission(seen, exercise.name)
        print(f"attention-kit: nothing to grade; received: {', '.join(seen) or 'nothing'}", flush=True)
    else:
        report = grade_submission(submission, folder=root / "submission", cache=cache, limits=limits,
                                  fix_credit=fix_credit, exercise=exercise)
        graded = str(submission.relative_to(root / "submission"))
        not_graded = [name for name in seen if name != graded and Path(name).suffix in (".ipynb", ".py")]
        results = results_json(report, graded, not_graded, exercise.name)
        print(instructor_log(report, graded, not_graded), flush=True)
    out = root / "results"
    out.mkdir(parents=True, exist_ok=True)
    temporary = out / f".results.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    temporary.replace(out / "results.json")
    return results


def main(*, exercise: str, root: str = str(DEFAULT_ROOT), report_cache: Path | None = None) -> int:
    run_autograder(Path(root), exercise=exercises.exercise(exercise), cache=report_cache,
                   fix_credit=float(os.environ.get(FIX_CREDIT_ENV) or 0.0))
    return 0
