"""The hidden test cells' entry point: `grader.hidden.score_part("sdpa")`.

At `nbgrader autograde` these cells are not run in the student's kernel at all: the kit's
preprocessor grades the notebook's source in the sandbox and writes each part's verdict into
its test cell (see grader.nbgrader). This function serves runs inside a kernel (an
instructor executing the source notebook): it grades the cells executed so far, still in the
sandbox, prints the part's checks and returns the part's score as the cell's value, which
nbgrader reads as partial credit.
"""
from __future__ import annotations

from grader.checks import checks_for
from grader.exercises import of_part
from grader.grade import grade
from grader.report.text import render_text
from grader.handin.source import submission_from_cells


def score_part(part: str, lang: str = "zh") -> float:
    from IPython import get_ipython

    shell = get_ipython()
    history = list(shell.user_ns.get("In", [])) if shell is not None else []
    report = grade(submission_from_cells(history, "<kernel>", exercise=of_part(part)), checks=checks_for(part))
    print(render_text(report, lang))
    return report["score"]
