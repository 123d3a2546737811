"""A throwaway nbgrader course for the tests: the repo's nbgrader_config.py, a course root of its own.

`Course.create(path)` is a course with the assignment generated (`nbgrader generate_assignment`, run once per session and copied);
`course.nbgrader(...)` runs any nbgrader command on it from the repo root (so the repo's
nbgrader_config.py and its plugins apply, as for an instructor), exactly as `make demo` does.
`shared_class(tmp_path_factory)` builds one class of Colab-case notebooks and runs zip_collect,
autograde and generate_feedback on it once per test session, for every test module that asks.
"""
from __future__ import annotations

import atexit
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import MissingEntry

from support import colab_notebooks as cn
from grader.build.config import ASSIGNMENT, ROOT, SOURCE_NOTEBOOK
from grader.process import nbgrader_env, open_gradebook

NOTEBOOK = f"{ASSIGNMENT}.ipynb"
SUBMISSIONS = ROOT / "tests" / "submissions"
_TEMPLATE: dict[str, Path] = {}  # the session's generated course, copied by Course.create


@dataclass
class Run:
    returncode: int
    output: str


@dataclass
class Course:
    root: Path
    log: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, root: Path) -> "Course":
        """A course with the assignment generated: built once per session, then copied (generate_assignment
        takes seconds; a copy of its result is the same course)."""
        if "template" not in _TEMPLATE:
            template = Path(tempfile.mkdtemp(prefix="attention-kit-course-"))
            atexit.register(shutil.rmtree, template, ignore_errors=True)
            source = template / "source" / ASSIGNMENT
            source.mkdir(parents=True)
            shutil.copyfile(ROOT / SOURCE_NOTEBOOK, source / NOTEBOOK)
            cls(template).nbgrader("generate_assignment", ASSIGNMENT, "--force")
            _TEMPLATE["template"] = template
        shutil.copytree(_TEMPLATE["template"], root, dirs_exist_ok=True)
        return cls(root)

    def nbgrader(self, *args: str, check: bool = True) -> Run:
        command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={self.root}"]
        done = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True, timeout=1200)
        run = Run(done.returncode, done.stdout + done.stderr)
        self.log.append(f"$ nbgrader {' '.join(args)}\n{run.output}")
        if check and done.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} failed ({done.returncode}):\n{run.output}")
        return run

    @property
    def release(self) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)

    def extracted(self, name: str) -> Path:
        return self.root / "downloaded" / ASSIGNMENT / "extracted" / name

    def submitted(self, student: str) -> Path:
        return self.root / "submitted" / student / ASSIGNMENT / NOTEBOOK

    def autograded(self, student: str) -> Path:
        return self.root / "autograded" / student / ASSIGNMENT / NOTEBOOK

    def feedback(self, student: str) -> Path:
        return self.root / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"

    def scores(self) -> dict[str, dict[str, tuple[float | None, bool]]]:
        """student -> grade cell -> (score, needs manual grading), read from the course's gradebook."""
        found: dict[str, dict[str, tuple[float | None, bool]]] = {}
        with open_gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gradebook:
            for student in gradebook.students:
                try:
                    notebook = gradebook.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student.id)
                except MissingEntry:
                    continue
                found[student.id] = {g.cell.name: (g.score, bool(g.needs_manual_grade)) for g in notebook.grades}
        return found

    def total(self, student: str) -> float:
        return sum(score or 0.0 for score, _ in self.scores()[student].values())

    def report(self, student: str) -> dict:
        """The grader's report that autograde stored in the autograded notebook's metadata."""
        nb = json.loads(self.autograded(student).read_text(encoding="utf-8"))
        return nb["metadata"]["attention_kit"]["report"]


def release_answers(course: Course, answers: dict[str, str]) -> nbformat.NotebookNode:
    return cn.answered(course.release, answers)


def correct_notebook(course: Course, style: str | None = None) -> nbformat.NotebookNode:
    """The release notebook answered with the reference solution, or with tests/submissions/correct/<style>.py."""
    answers = cn.reference_answers() if style is None else cn.answers_from_python(SUBMISSIONS / "correct" / f"{style}.py")
    return cn.answered(course.release, answers)


def mutant_notebook(course: Course, mutant: str) -> nbformat.NotebookNode:
    return cn.answered(course.release, cn.answers_from_python(SUBMISSIONS / "mutants" / f"{mutant}.py"))


def colab_cases(course: Course) -> dict[str, nbformat.NotebookNode]:
    """student id -> notebook, one per way a notebook comes back from Colab (all with correct code unless named)."""
    reference = cn.reference_answers()
    good = correct_notebook(course)
    return {
        "colab40": cn.colab_saved(good, seed="colab40"),
        "stripped": cn.colab_saved(cn.strip_nbgrader(correct_notebook(course, "einsum_where_torchsoftmax")), "stripped"),
        "deleted": cn.delete(good, "sdpa_tests", "mha_tests", "model_args", "imports"),
        "duplicated": duplicated(course, reference),
        "reordered": cn.move(cn.move(good, "mha", 4), "sdpa_tests", len(good.cells)),
        "split": split_cells(good),
        "moved": moved_to_test_cell(course, reference),
        "gradeflag": with_meta(with_meta(with_meta(good, "sdpa_tests", grade=False), "mha_tests", points=100),
                               "sdpa", grade=True, points=5),
        "mask-diag.1": mutant_notebook(course, "mask-diagonal"),
        "gutted": gutted(good),
        "forged": forged(mutant_notebook(course, "mask-diagonal")),
    }


def gutted(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Every code cell deleted but the MultiHeadAttention answer (no imports, no ModelArgs, no SDPA, no tests)."""
    nb = copy.deepcopy(nb)
    nb.cells = [cell for cell in nb.cells if cell.cell_type != "code" or cn.grade_id(cell) == "mha"]
    return nb


def forged(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A cheat: full marks written into the test cells' outputs, and a 50-point grade cell of the student's own."""
    nb = copy.deepcopy(nb)
    for grade_id in ("sdpa_tests", "mha_tests"):
        cell = nb.cells[cn.cell_by_id(nb, grade_id)]
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "10.0"}, execution_count=1)]
    bonus = nbformat.v4.new_code_cell("print('bonus')")
    bonus.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus", "points": 50, "solution": False,
                                  "locked": False, "schema_version": 3, "task": False}
    nb.cells.append(bonus)
    return nb


def duplicated(course: Course, reference: dict[str, str]) -> nbformat.NotebookNode:
    """The student copied the SDPA cell and answered in the copy (the stub above still raises); the MHA test cell twice."""
    nb = cn.duplicate(cn.answered(course.release, {"mha": reference["mha"]}), "sdpa")
    nb.cells[cn.cell_by_id(nb, "sdpa") + 1].source = reference["sdpa"]
    return cn.duplicate(nb, "mha_tests")


def moved_to_test_cell(course: Course, reference: dict[str, str]) -> nbformat.NotebookNode:
    """The SDPA answer written into the Part 1 test cell; the SDPA cell emptied."""
    nb = cn.answered(course.release, {"sdpa": "# 代码挪到了测试单元格 / moved to the test cell\n", "mha": reference["mha"]})
    tests = nb.cells[cn.cell_by_id(nb, "sdpa_tests")]
    tests.source = reference["sdpa"] + "\n\n" + tests.source
    return nb


def split_cells(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The SDPA cell split into a helper cell and the function, and the imports cell split in two."""
    nb = cn.edit(nb, "sdpa", "def scaled_dot_product_attention(",
                 "def _future(T, device):\n    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)\n\n\n"
                 "def scaled_dot_product_attention(")
    nb = cn.split(nb, "sdpa", "def scaled_dot_product_attention(")
    return cn.split(nb, "imports", "import torch")


def with_meta(nb: nbformat.NotebookNode, cell: str, **meta) -> nbformat.NotebookNode:
    """The notebook with one cell's nbgrader metadata edited, as a student can in Jupyter's cell toolbar."""
    nb = copy.deepcopy(nb)
    nb.cells[cn.cell_by_id(nb, cell)].metadata["nbgrader"].update(meta)
    return nb


def release_course(root: Path) -> Path:
    """A course folder holding only the repo's release notebook: enough for the repair preprocessors."""
    target = root / "release" / ASSIGNMENT / NOTEBOOK
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "release" / ASSIGNMENT / NOTEBOOK, target)
    return root


def apply(preprocessor_class, nb: nbformat.NotebookNode, course_root: Path, **resources) -> nbformat.NotebookNode:
    """Run one preprocessor on a notebook as nbgrader would for student `someone` in the given course."""
    from traitlets.config import Config

    config = Config({"CourseDirectory": {"root": str(course_root)}})
    info = {"student": "someone", "assignment": ASSIGNMENT, "notebook": ASSIGNMENT, **resources}
    nb, _ = preprocessor_class(config=config).preprocess(copy.deepcopy(nb), {"nbgrader": info})
    return nb


def repaired(nb: nbformat.NotebookNode, course_root: Path) -> nbformat.NotebookNode:
    """Both repair steps, in the order nbgrader_config.py runs them."""
    from grader.nbgrader.restore_cell_metadata import RestoreCellMetadata
    from grader.nbgrader.restore_missing_cells import RestoreMissingCells

    return apply(RestoreMissingCells, apply(RestoreCellMetadata, nb, course_root), course_root)


def ids(nb: nbformat.NotebookNode) -> list[str | None]:
    """The grade_id of every cell, None for the student's own cells."""
    return [cn.grade_id(cell) for cell in nb.cells]


def release_notebook() -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "release" / ASSIGNMENT / NOTEBOOK, as_version=4)


COLAB_FILE_NAMES = {
    "colab40": "attention.ipynb",
    "stripped": "Copy of attention.ipynb",
    "deleted": "attention (1).ipynb",
    "duplicated": "attention.ipynb 的副本",
    "reordered": "Copy of attention (2).ipynb",
    "split": "attention.ipynb 的副本.ipynb",
    "moved": "attention.ipynb",
    "gradeflag": "attention.ipynb",
    "mask-diag.1": "attention.ipynb",
    "gutted": "attention.ipynb",
    "forged": "attention (3).ipynb",
}
"""The shared class: student id -> the name Colab gave their download."""
LEFT_OUT = {
    "attention.ipynb": "no student id",
    "notes_readme.txt": "not a notebook",
    "colab40_attention (1).ipynb": "newer file",
}
"""Files in the shared class's downloads that zip_collect must leave out, and a word of the reason it gives."""


@dataclass
class ClassRun:
    course: Course
    notebooks: dict[str, nbformat.NotebookNode]  # student -> the notebook as downloaded
    zip_collect: str
    autograde: str
    feedback: str


_SHARED: dict[str, ClassRun] = {}


def shared_class(tmp_path_factory) -> ClassRun:
    """One class of Colab cases through zip_collect, autograde and generate_feedback, built once per session."""
    if "run" not in _SHARED:
        course = Course.create(tmp_path_factory.mktemp("colab-class"))
        notebooks = colab_cases(course)
        for student, nb in notebooks.items():
            cn.write(nb, course.extracted(f"{student}_{COLAB_FILE_NAMES[student]}"))
        older = course.extracted("colab40_attention (1).ipynb")
        cn.write(correct_notebook(course), older)
        os.utime(older, (1_700_000_000, 1_700_000_000))  # downloaded before colab40's newer file
        cn.write(course.release, course.extracted("attention.ipynb"))
        course.extracted("notes_readme.txt").write_text("not a notebook\n", encoding="utf-8")
        _SHARED["run"] = ClassRun(
            course, notebooks,
            zip_collect=course.nbgrader("zip_collect", ASSIGNMENT).output,
            autograde=course.nbgrader("autograde", ASSIGNMENT).output,
            feedback=course.nbgrader("generate_feedback", ASSIGNMENT).output,
        )
    return _SHARED["run"]


def with_hidden_tests(nb):
    """As after OverwriteCells: each test cell is the source notebook's, hidden block included."""
    nb = copy.deepcopy(nb)
    source = nbformat.read(ROOT / SOURCE_NOTEBOOK, as_version=4)
    for grade_id in ("sdpa_tests", "mha_tests"):
        nb.cells[cn.cell_by_id(nb, grade_id)].source = source.cells[cn.cell_by_id(source, grade_id)].source
        assert "BEGIN HIDDEN TESTS" in nb.cells[cn.cell_by_id(nb, grade_id)].source
    return nb
