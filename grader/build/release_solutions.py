"""`python -m grader release-solutions ASSIGNMENT [--force] [--course DIR]`: publish the solutions after grading.

Copies the generated solution notebook and module (`solutions/<assignment>/<assignment>.ipynb`
and `.py`, from `make build`) into `<course>/release/<assignment>/solutions/`, the published
folder, with the notebook's "Open in Colab" badge pointed at its new place. It refuses (exit
status 1, saying why) while nothing was handed in (no notebook under `submitted/`) or any submitted
notebook is not yet autograded: no autograded copy, an autograded copy older than the submission,
or no grades for it in the gradebook. `--force` releases anyway.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat
from nbgrader.api import MissingEntry

from grader.build.colab_badge import colab_url
from grader.build.config import ROOT
from grader.build.read_write import notebook_bytes
from grader.errors import GraderError
from grader.process import open_gradebook

SOLUTIONS_FOLDER = "solutions"
"""Where, inside `release/<assignment>/`, the solutions are published."""


def submitted_notebooks(course: Path, assignment: str) -> list[Path]:
    submitted = course / "submitted"
    return sorted(submitted.glob(f"*/{assignment}/*.ipynb")) if submitted.is_dir() else []


def ungraded(course: Path, assignment: str) -> list[str]:
    """Each submitted notebook that autograde has not graded since it was submitted, with the reason."""
    problems = []
    notebooks = submitted_notebooks(course, assignment)
    graded = gradebook_grades(course, assignment, {(p.parts[-3], p.stem) for p in notebooks})
    for path in notebooks:
        student, notebook = path.parts[-3], path.stem
        autograded = course / "autograded" / student / assignment / path.name
        name = path.relative_to(course).as_posix()
        if not autograded.is_file():
            problems.append(f"{name} (not autograded)")
        elif autograded.stat().st_mtime < path.stat().st_mtime:
            problems.append(f"{name} (changed after it was autograded)")
        elif not graded.get((student, notebook)):
            problems.append(f"{name} (no grades in the gradebook)")
    return problems


def gradebook_grades(course: Path, assignment: str, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], bool]:
    """(student, notebook) -> whether the gradebook holds an autograded score for every grade cell."""
    database = course / "gradebook.db"
    if not wanted or not database.is_file():
        return {}
    found = {}
    with open_gradebook(f"sqlite:///{database}") as gradebook:
        for student, notebook in wanted:
            try:
                submission = gradebook.find_submission_notebook(notebook, assignment, student)
            except MissingEntry:
                found[(student, notebook)] = False
                continue
            found[(student, notebook)] = all(grade.auto_score is not None for grade in submission.grades)
    return found


def publish(assignment: str, course: Path) -> list[Path]:
    """Copy the solution notebook and module into the course's release folder; the written paths."""
    source = ROOT / "solutions" / assignment
    files = [source / f"{assignment}.ipynb", source / f"{assignment}.py"]
    missing = [str(f.relative_to(ROOT)) for f in files if not f.is_file()]
    if missing:
        raise GraderError(f"missing {', '.join(missing)}: run `make build` first")
    target = course / "release" / assignment / SOLUTIONS_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    notebook = nbformat.read(files[0], as_version=4)
    old_url = colab_url(f"solutions/{assignment}/{assignment}.ipynb")
    new_url = colab_url(f"release/{assignment}/{SOLUTIONS_FOLDER}/{assignment}.ipynb")
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.replace(old_url, new_url)
    written = [target / files[0].name, target / files[1].name]
    written[0].write_bytes(notebook_bytes(notebook, str(written[0])))
    shutil.copyfile(files[1], written[1])
    return written


def advice(assignment: str, problems: list[str]) -> list[str]:
    """The commands that grade exactly these notebooks. nbgrader autograde skips a student whose autograded
    folder exists, which is the case after `zip_collect --force` re-collected them: those need --force."""
    regrade = sorted({problem.split("/")[1] for problem in problems if not problem.endswith("(not autograded)")})
    lines = ["Grade them first, then run release-solutions again:"]
    if len(regrade) < len(problems):
        lines.append(f"  nbgrader autograde {assignment}")
    lines += [f"  nbgrader autograde {assignment} --force --student={student}" for student in regrade]
    lines.append("or release anyway: `python -m grader release-solutions "
                 f"{assignment} --force` (`make release-solutions ASSIGNMENT={assignment} FORCE=1`).")
    return lines


def main(*, assignment: str, force: bool = False, course: str | None = None) -> int:
    course_dir = Path(course).resolve() if course else ROOT
    if not submitted_notebooks(course_dir, assignment):
        if not force:
            print(f"release-solutions: refused, nothing was handed in: no notebook in "
                  f"{course_dir / 'submitted'}/<student>/{assignment}/. Collect and grade the class first "
                  f"(docs/instructors/grading.md), or release anyway: `python -m grader release-solutions {assignment} "
                  f"--force` (`make release-solutions ASSIGNMENT={assignment} FORCE=1`).", file=sys.stderr)
            return 1
        print("release-solutions: --force: releasing although nothing was handed in")
    problems = ungraded(course_dir, assignment)
    if problems and not force:
        print(f"release-solutions: refused, {len(problems)} submitted notebook(s) not autograded yet:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        for line in advice(assignment, problems):
            print(line, file=sys.stderr)
        return 1
    if problems:
        print(f"release-solutions: --force: releasing although {len(problems)} notebook(s) are not autograded")
    for path in publish(assignment, course_dir):
        print(f"released {os.path.relpath(path, Path.cwd())}")
    return 0
