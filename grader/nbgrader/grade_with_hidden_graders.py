"""Autograde step, in place of nbgrader's `Execute`: grade the notebook's code in the sandbox, write the verdicts into the test cells.

Student code never runs in nbgrader's process or in a Jupyter kernel here. The notebook's code
cells (hidden test blocks left out, so they read as the student's file does) go to
`grader.grade.grade` as text (`submission_from_cells`), which runs them in a confined worker and
computes every verdict in this process, so nothing the student's code does to a kernel (patched
torch, patched grader functions, input transformers) can change a grade.

Each autograder cell (`### BEGIN HIDDEN TESTS` ... `grader.hidden.score_part("sdpa")`) then gets
the outputs nbgrader's `SaveAutoGrades` and `generate_feedback` read:

1. a `stream` (stdout) with the part's checks: verdict, points, and the zh + en diagnosis, one line
   per paragraph (the notebook or the feedback page wraps it to its width: a hand-wrapped Chinese
   line would start with `、` or `。`);
2. when a check of the part has a `figure` (mask mistakes), a `display_data` PNG of the
   student's attention weights beside the expected ones (the part's first such check);
3. an `execute_result` whose text is the part's score (nbgrader's partial credit).

Never an `error` output or a stderr stream: nbgrader would read either as 0 points. The whole
report is kept in the notebook metadata (`attention_kit.report`) for export and feedback.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Unicode

from grader import exercises  # torch-free: nbgrader imports this module at start-up
from grader.handin import parent_budget
from grader.handin.clean_text import printable
from grader.report.text import BOTH, PARTS, check_lines, fix_lines, part_lines
from grader.nbgrader.attention_figure import display_data
from grader.nbgrader.hide_hidden_tests import remove_hidden_blocks
from grader.nbgrader.release_cells import kit_metadata
from grader.process import freeze_imported_objects, single_threaded_torch
from grader.sandbox.worker_process import start_fork_server_unless_cached
from grader.handin.source import submission_from_cells

PART_CALL = re.compile(r"""score_part\(\s*["'](\w+)["']""")
"""How an autograder cell names the part it grades (its hidden block calls grader.hidden.score_part)."""


def part_of(cell: NotebookNode) -> str | None:
    found = PART_CALL.search(cell.source)
    return found.group(1) if found else None


def part_text(report: dict, part: str, score: float, points: float, repairs: list[dict], others: list[dict]) -> str:
    """The stdout a test cell shows, in both languages (grader.report.text, as every report's text): the part's
    score, the verified fixes, then each check with its diagnosis (what several checks met, once)."""
    explained: set[tuple[str, str]] = set()
    out = [f"{PARTS.get(part, part)}：{score:g} / {points:g} 分 · points", *fix_lines(report, BOTH, part), ""]
    out += part_lines([c for c in report["checks"] if c["part"] == part], BOTH, explained)
    for check in others:
        out += [""] + check_lines(check, BOTH, explained)
    if repairs:
        out += ["", "评分前对 notebook 的修复 · Repairs made to the notebook before grading:"]
        for note in repairs:
            out += [f"  - {note['zh']}", f"    {note['en']}"]
    return "\n".join(out).rstrip() + "\n"


def code_as_submitted(nb: NotebookNode) -> list[str]:
    """The code cells as the student has them: test cells without the hidden blocks OverwriteCells put back
    (they define nothing the grader runs; a student's own cell keeps whatever it holds), so a notebook that
    needed no repair is graded exactly as `grader grade` grades the submitted file, and a report cached by
    `grade-all` serves autograde too."""
    return [remove_hidden_blocks(cell.source) if utils.is_grade(cell) else cell.source
            for cell in nb.cells if cell.cell_type == "code"]


class GradeWithHiddenGraders(NbGraderPreprocessor):
    """Grade the code cells with the hidden graders (sandboxed) and write each part's verdict into its test cell."""

    report_cache = Unicode("", help="a folder of cached reports (grader.report.cache) to reuse and fill; "
                                    "none when empty. `grade-all --nbgrader` sets it").tag(config=True)

    fix_credit = Float(0.0, min=0.0, max=1.0, help=(
        "The fraction of the points a verified fix earns that counts, per part (grader.fixes); "
        "fixes are shown whatever it is.")).tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        info = resources.get("nbgrader", {})
        # ids are file names a student chose (zip_collect): escaped before they reach an instructor's terminal
        name = printable("/".join(str(info.get(key, "?")) for key in ("student", "assignment", "notebook")) + ".ipynb",
                         keep_newlines=False)
        sources = code_as_submitted(nb)
        assignment = str(info.get("assignment", ""))
        exercise = exercises.declared(assignment)  # None: its name, then its code, say (grader.handin.exercise_of)
        cache = Path(self.report_cache) if self.report_cache else None
        start_fork_server_unless_cached(cache)  # before this process loads torch, as the CLI does
        single_threaded_torch()  # this step is where nbgrader's process enters grading, as the CLI is for ours
        from grader.grade import grade

        freeze_imported_objects()

        with parent_budget.charged():  # reading and grading this notebook, as for `grader grade`
            report = grade(submission_from_cells(sources, name, is_notebook=True, exercise=exercise),
                           cache=cache, fix_credit=self.fix_credit)
        kit = kit_metadata(nb)
        kit["report"] = report
        if report.get("isolation_missing"):
            self.log.warning("%s graded with incomplete isolation: %s", name, "; ".join(report["isolation_missing"]))
        self.log.info("%s: %g / %g, mistakes: %s", name, report["score"], report["max_score"],
                      ", ".join(report["mistakes"]) or "none")

        grade_cells = [cell for cell in nb.cells if cell.cell_type == "code" and utils.is_grade(cell)]
        others = [c for c in report["checks"] if c["part"] not in PARTS and not c["passed"]]
        for position, cell in enumerate(grade_cells):
            last = position == len(grade_cells) - 1
            self.write_outputs(cell, report, repairs=kit.get("repairs", []) if position == 0 else [],
                               others=others if last else [])
        return nb, resources

    def write_outputs(self, cell: NotebookNode, report: dict, repairs: list[dict], others: list[dict]) -> None:
        points = float(cell.metadata["nbgrader"]["points"])
        part = part_of(cell)
        checks = [c for c in report["checks"] if c["part"] == part]
        cell.execution_count = None
        if not checks:
            self.log.error("Autograder cell %r names no part the grader knows (%r): it scores 0",
                           cell.metadata["nbgrader"].get("grade_id"), part)
            text = ("这个测试单元格没有调用 grader.hidden.score_part(...)，无法评分。"
                    " / This test cell does not call grader.hidden.score_part(...), so it is not graded.\n")
            cell.outputs = [stream(text), score_output(0.0)]
            return
        earned = sum(c["points"] for c in checks) + (report.get("fix_credit") or {}).get("by_part", {}).get(part, 0.0)
        maximum = sum(c["max_points"] for c in checks)
        score = round(earned * points / maximum, 4) if maximum else 0.0
        if maximum != points:
            self.log.warning("Cell %r is worth %g points but part %r sums to %g: score scaled",
                             cell.metadata["nbgrader"].get("grade_id"), points, part, maximum)
        outputs = [stream(part_text(report, part, score, points, repairs, others))]
        pictured = next((check for check in checks if check.get("figure")), None)
        if pictured:  # the first check with a picture: one is enough to see the mask
            figure = pictured["figure"]
            outputs.append(NotebookNode(display_data(figure["student"], figure["expected"], pictured["id"])))
        outputs.append(score_output(score, verdict_html(report, part, score, points)))
        cell.outputs = outputs


def verdict_html(report: dict, part: str, score: float, points: float) -> str:
    """The part's score where a page would show a bare number: its name and score only, since the stdout
    above already gives each check's verdict once (a table repeating it made every verdict appear twice).
    Only plain tags and text (the page's sanitizer allows no style or script), escaped."""
    return f"<p><b>{html.escape(PARTS.get(part, part))}：{score:g} / {points:g} 分 · points</b></p>"


def stream(text: str) -> NotebookNode:
    return NotebookNode({"output_type": "stream", "name": "stdout", "text": text})


def score_output(score: float, verdict: str | None = None) -> NotebookNode:
    """nbgrader's partial credit is the text/plain of the execute_result; a feedback page shows its text/html
    (the verdict table) instead of a bare number."""
    data = {"text/plain": repr(float(score))}
    if verdict:
        data["text/html"] = verdict
    return NotebookNode({"output_type": "execute_result", "execution_count": None, "data": data, "metadata": {}})
