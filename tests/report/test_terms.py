"""Does everything a student reads keep to one term per concept, as docs/terms.md lists them?

The texts: the source notebooks of both exercises (their prose, TODOs and the inlined self-check), the mistake
catalog, the self-check modules, the checks' titles and every grader module whose sentences reach a report or a
feedback page. The exception docs/terms.md names (the notebook's one note tying 掩码 to the lab's 遮罩)
is allowed once, in the notebook only.
"""
from __future__ import annotations

import json
import re

import pytest

from grader.build.course_text import filled
from grader.checks import checks_for
from support.paths import ROOT
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

TERMS = ROOT / "docs" / "terms.md"
NOTE = "因果掩码（causal mask，实验 07 里叫“遮罩”）"
GRADER_SENTENCES = [*sorted((ROOT / "grader" / "checks").rglob("*.py")),
                    *(ROOT / "grader" / name for name in ("grade.py", "report/json_report.py", "fixes/__init__.py",
                                                          "handin/places.py", "report/repeats.py", "rules/__init__.py",
                                                          "rules/reader.py", "checks/diagnosis.py")),
                    ROOT / "grader" / "nbgrader" / "grade_with_hidden_graders.py"]


def never_written() -> list[str]:
    """The terms in the table's "never write" column, each quoted 「like this」."""
    rows = [line.split("|") for line in TERMS.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in rows[0]]
    column = header.index("never write")
    return [term for row in rows[2:] for term in re.findall(r"「([^」]+)」", row[column])]


def notebook_text(exercise: str = "attention") -> str:
    """A source notebook as the build writes it for students: the course's own words in place (COURSE_TEXT)."""
    nb = json.loads((ROOT / "source" / exercise / f"{exercise}.ipynb").read_text(encoding="utf-8"))
    return filled("\n".join("".join(cell["source"]) for cell in nb["cells"]))


def student_texts() -> dict[str, str]:
    catalog = json.loads((ROOT / "grader" / "mistakes.json").read_text(encoding="utf-8"))
    texts = {"notebook": notebook_text().replace(NOTE, "", 1),
             "kv_cache notebook": notebook_text("kv_cache"),
             "kv_cache selfcheck": (ROOT / "source" / "kv_cache" / "selfcheck.py").read_text(encoding="utf-8"),
             "catalog": json.dumps(catalog, ensure_ascii=False),
             "selfcheck": (ROOT / "source" / "attention" / "selfcheck.py").read_text(encoding="utf-8"),
             "check titles": "\n".join(f"{c.title_zh} {c.title_en}" for c in checks_for(exercise=EXERCISE))}
    texts.update({str(path.relative_to(ROOT)): path.read_text(encoding="utf-8") for path in GRADER_SENTENCES})
    return texts


def test_the_term_list_names_what_not_to_write():
    assert {"遮罩", "前导维", "键的维度"} <= set(never_written())


def test_the_student_facing_texts_keep_to_the_term_list():
    found = {(name, term) for name, text in student_texts().items() for term in never_written() if term in text}
    assert not found, f"terms docs/terms.md says never to write: {sorted(found)}"


def test_the_lab_word_is_tied_to_the_mask_once_in_the_notebook():
    assert notebook_text().count(NOTE) == 1
