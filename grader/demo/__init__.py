"""`python -m grader demo`: build, then take a demo class of each assignment from Colab downloads to released
solutions with nbgrader.

The demo folder (git-ignored, `demo/` by default) is a course directory of its own, configured by
the repo's nbgrader_config.py (so the kit's plugins apply, as for an instructor), and the
instructor's gradebook.db at the root never sees demo students. The course holds every declared exercise as an
assignment (`attention`, `kv_cache`), each graded by its own hidden graders. The demo is the list `STEPS`;
each step takes the `Demo` and adds to it, for every assignment:

build -> a course with the assignments released -> each class's Colab downloads in
`downloaded/<assignment>/extracted/` -> `nbgrader zip_collect` -> `nbgrader autograde` ->
`nbgrader generate_feedback` -> `nbgrader export` (grades.csv) -> the grade tables, the class summaries and
which page to open -> release solutions.
"""
from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

from grader import build
from grader.demo import class_notebooks as cn
from grader.demo.classes import CLASSES, Student
from grader.build import release_solutions
from grader.build.config import ROOT
from grader.build.course_text import course_text
from grader.errors import NbgraderFailed, UsageError
from grader.exercises import exercise
from grader.grade_all.text import class_summary
from grader.process import nbgrader_env

MARKER = ".attention-kit-demo"
SUBMISSIONS = ROOT / "tests" / "submissions"


def unmappable(assignment: str) -> str:
    """A download without a student id in its name: zip_collect reports it and collects nothing from it."""
    return f"{assignment}.ipynb"


@dataclass
class Demo:
    course: Path
    lang: str = "zh"  # the class summary's language, as grade-all's --lang
    classes: dict[str, tuple[Student, ...]] = field(default_factory=lambda: dict(CLASSES))  # assignment -> class
    rows: list[dict] = field(default_factory=list)
    left_out: dict[str, list[str]] = field(default_factory=dict)  # assignment -> downloads not collected


def run_build(demo: Demo) -> None:
    """Regenerate release/, exercises/ and solutions/ (`make build`). The placeholder Colab repository is only
    noted: nothing is published from a demo, and `make build` warns loudly before anything is."""
    build.regenerate()
    if build.colab_repo_is_placeholder():
        print("demo: the Colab links in release/ point at the placeholder repository (COLAB_REPO in "
              "grader/build/config.py); set it before you publish (docs/instructors/publishing.md)")


def prepare_course(demo: Demo) -> None:
    """A fresh course directory holding each assignment's source notebook, released with nbgrader into its own
    gradebook."""
    if demo.course.exists():
        if any(demo.course.iterdir()) and not (demo.course / MARKER).exists():
            raise UsageError(f"{demo.course} is not empty and was not made by `grader demo`; refusing to clear it")
        shutil.rmtree(demo.course)
    demo.course.mkdir(parents=True)
    (demo.course / MARKER).write_text("made by `python -m grader demo`; deleted and rebuilt on every run\n")
    for assignment in demo.classes:
        notebook = exercise(assignment).source_notebook
        # the course's own words filled in, as `make build` fills them into release/
        cn.write(course_text(nbformat.read(ROOT / notebook, as_version=4), notebook),
                 demo.course / "source" / assignment / f"{assignment}.ipynb")
        nbgrader(demo, "generate_assignment", assignment, "--force")


def write_downloads(demo: Demo) -> None:
    """Each student's notebook as downloaded from Colab, named `<student_id>_<Colab's name>`."""
    for assignment, students in demo.classes.items():
        release = nbformat.read(demo.course / "release" / assignment / f"{assignment}.ipynb", as_version=4)
        extracted = demo.course / "downloaded" / assignment / "extracted"
        for student in students:
            cn.write(student_notebook(release, assignment, student), extracted / f"{student.id}_{student.file_name}")
        cn.write(release, extracted / unmappable(assignment))
        print(f"demo: {assignment}: {len(students)} Colab downloads (+1 without a student id) in "
              f"{shown(extracted)}")


def zip_collect(demo: Demo) -> None:
    """`nbgrader zip_collect <assignment>`: downloads -> submitted/<student>/<assignment>/<assignment>.ipynb."""
    for assignment in demo.classes:
        output = nbgrader(demo, "zip_collect", assignment, "--force")
        left_out = [line.split("Not collected: ", 1)[1] for line in output.splitlines() if "Not collected: " in line]
        demo.left_out[assignment] = left_out
        collected = sorted(p.parts[-3] for p in (demo.course / "submitted").glob(f"*/{assignment}/{assignment}.ipynb"))
        print(f"demo: {assignment}: zip_collect collected {len(collected)} notebooks; left out: "
              f"{'; '.join(left_out) or 'none'}")


def autograde(demo: Demo) -> None:
    """`nbgrader autograde <assignment>`: repair, then the assignment's hidden graders in their sandbox (a few seconds
    each)."""
    for assignment, students in demo.classes.items():
        print(f"demo: nbgrader autograde {assignment} ({len(students)} notebooks, a few seconds each"
              f"{'; one loops forever until its time limit' if any(s.expect == 'timeout' for s in students) else ''})")
        nbgrader(demo, "autograde", assignment, "--force")


def generate_feedback(demo: Demo) -> None:
    """`nbgrader generate_feedback <assignment>`: one HTML page per student, hidden tests removed."""
    for assignment in demo.classes:
        nbgrader(demo, "generate_feedback", assignment, "--force")
        pages = sorted((demo.course / "feedback").glob(f"*/{assignment}/*.html"))
        print(f"demo: {assignment}: {len(pages)} feedback pages in {shown(demo.course / 'feedback')}")


def export_grades(demo: Demo) -> None:
    """`nbgrader export`: the gradebook, every assignment's grades, as grades.csv."""
    nbgrader(demo, "export", f"--to={demo.course / 'grades.csv'}")
    print(f"demo: grades exported to {shown(demo.course / 'grades.csv')}")


def collect_rows(demo: Demo) -> None:
    """Per assignment and student: the exported score and the mistakes the grader diagnosed (its report, kept by
    autograde)."""
    with (demo.course / "grades.csv").open(newline="", encoding="utf-8") as handle:
        exported = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}
    for assignment, students in demo.classes.items():
        for student in students:
            row = exported.get((assignment, student.id))
            report = stored_report(demo.course / "autograded" / student.id / assignment / f"{assignment}.ipynb")
            demo.rows.append({
                "assignment": assignment,
                "student": student,
                "score": float(row["score"]) if row else None,
                "max_score": float(row["max_score"]) if row else None,
                "mistakes": report["mistakes"] if report else None,
                "report": report,
                "feedback": feedback_page(demo, assignment, student.id).is_file(),
            })


def print_table(demo: Demo) -> None:
    for assignment in demo.classes:
        rows = [row for row in demo.rows if row["assignment"] == assignment]
        print(f"\n{assignment}")
        print(f"{'student':<10}{'Colab file':<30}{'score':>8}   {'diagnosed mistakes':<34}expected")
        for row in rows:
            student = row["student"]
            score = "—" if row["score"] is None else f"{row['score']:g}/{row['max_score']:g}"
            mistakes = "—" if row["mistakes"] is None else (", ".join(row["mistakes"]) or "none")
            print(f"{pad(student.id, 10)}{pad(student.file_name, 30)}{score:>8}   {pad(mistakes, 34)}{verdict(row)}")
        for left in demo.left_out.get(assignment, []):
            print(f"(not collected: {left})")
    good = sum(verdict(row).startswith("✓") for row in demo.rows)
    print(f"\n{good} of {len(demo.rows)} hand-ins ({len(demo.classes)} assignments) graded as expected; feedback pages: "
          f"{sum(row['feedback'] for row in demo.rows)}")


def print_summary_and_pointers(demo: Demo) -> None:
    """Each assignment's class summary, as `grade-all` prints it, and where to look next: a feedback page to open
    (a student with mistakes), the autograded notebooks."""
    for assignment in demo.classes:
        rows = [row for row in demo.rows if row["assignment"] == assignment]
        reports = [{**row["report"], "student": row["student"].id} for row in rows if row["report"]]
        print(f"\nClass summary of {assignment} (what `python -m grader grade-all` prints for a class; "
              f"--lang {demo.lang}):")
        print(class_summary(reports, demo.lang))
        pointed = next((row for row in rows if row["mistakes"] and row["feedback"]), None)
        if pointed:
            page = shown(feedback_page(demo, assignment, pointed["student"].id))
            print(f"\nOpen a feedback page in a browser, e.g. {page} ({pointed['student'].id}: "
                  f"{', '.join(pointed['mistakes'])});")
    pages = shown(demo.course / "feedback")
    print(f"every student's is {pages}/<student>/<assignment>/<assignment>.html. The verdicts are also in the test "
          f"cells of {shown(demo.course)}/autograded/<student>/<assignment>/<assignment>.ipynb.")


def release_demo_solutions(demo: Demo) -> None:
    """`python -m grader release-solutions <assignment>` on the demo course: every submission is graded now."""
    for assignment in demo.classes:
        if release_solutions.main(assignment=assignment, course=str(demo.course)) != 0:
            raise RuntimeError(f"release-solutions refused {assignment} although the demo class is autograded")


def check_every_student(demo: Demo) -> None:
    """Every demo hand-in has a score, a report and a feedback page, as the grader was expected to find."""
    missing = [f"{row['assignment']}/{row['student'].id}" for row in demo.rows
               if row["score"] is None or row["mistakes"] is None or not row["feedback"]]
    if missing:
        raise RuntimeError(f"demo: no grade, report or feedback page for {', '.join(missing)}")
    wrong = [f"{row['assignment']}/{row['student'].id}" for row in demo.rows if not verdict(row).startswith("✓")]
    if wrong:
        raise RuntimeError(f"demo: graded differently than expected: {', '.join(wrong)}")


STEPS: tuple[Callable[[Demo], None], ...] = (
    run_build,
    prepare_course,
    write_downloads,
    zip_collect,
    autograde,
    generate_feedback,
    export_grades,
    collect_rows,
    print_table,
    print_summary_and_pointers,
    release_demo_solutions,
    check_every_student,
)


def main(*, dir: str = "demo", lang: str = "zh") -> int:  # noqa: A002 (the CLI's option name)
    demo = Demo(course=(ROOT / dir).resolve(), lang=lang)
    for step in STEPS:
        step(demo)
    return 0


# --- helpers --------------------------------------------------------------------------------------


def student_notebook(release: nbformat.NotebookNode, assignment: str, student: Student) -> nbformat.NotebookNode:
    if student.answers == "untouched":
        nb = release
    elif student.answers == "reference":
        nb = cn.answered(release, cn.reference_answers(assignment))
    else:
        nb = cn.answered(release, cn.answers_from_python(SUBMISSIONS / f"{student.answers}.py"))
    if student.colab == "stripped":
        nb = cn.strip_nbgrader(nb)
    if student.colab:
        nb = cn.colab_saved(nb, seed=student.id)
    return nb


def shown(path: Path) -> Path:
    """A path as the demo prints it: from the repository root where it is inside (`demo/`), else whole (`--dir`)."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def feedback_page(demo: Demo, assignment: str, student: str) -> Path:
    return demo.course / "feedback" / student / assignment / f"{assignment}.html"


def pad(text: str, width: int) -> str:
    """Left-justify to a width in terminal columns (a CJK character takes two)."""
    columns = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
    return text + " " * max(width - columns, 1)


def stored_report(path: Path) -> dict | None:
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))["metadata"].get("attention_kit", {}).get("report")


def verdict(row: dict) -> str:
    student, mistakes = row["student"], row["mistakes"]
    if mistakes is None or row["score"] is None:
        return "✗ not graded"
    if not student.expect:
        return "✓ full marks" if row["score"] == row["max_score"] else f"✗ expected full marks"
    return f"✓ {student.expect}" if student.expect in mistakes else f"✗ expected {student.expect}"


def nbgrader(demo: Demo, *args: str) -> str:
    """Run an nbgrader command from the repo root (its nbgrader_config.py) on the demo course directory."""
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={demo.course}"]
    done = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True)
    if done.returncode != 0:
        raise NbgraderFailed(f"nbgrader {args[0]} failed:\n{done.stdout}{done.stderr}", done.returncode)
    return done.stdout + done.stderr
