"""Does `WithholdFixCode.until` keep each verified fix's code off a feedback page before its day, keep the line and
the points, and show the code on the page generated on or after that day?

The page is rendered by the steps and the exporter `nbgrader generate_feedback` uses (nbgrader_config.py), from a
test cell written as autograde writes it (grader.nbgrader.grade_with_hidden_graders.part_text).
"""
from __future__ import annotations

import datetime
import runpy

import pytest
from nbformat import v4
from traitlets import TraitError

from grader.checks import Check, Outcome
from grader.fixes import message
from grader.nbgrader.feedback_page_policy import FeedbackPageExporter
from grader.nbgrader.grade_with_hidden_graders import part_text
from grader.nbgrader.sanitize_feedback import SanitizeFeedback
from grader.nbgrader.withhold_fix_code import WithholdFixCode
from grader.report.json_report import build_report
from support.paths import ROOT

pytestmark = pytest.mark.unit

AFTER = "y = y.reshape(B, T, C)"
TODAY = datetime.date.today()


def autograded_notebook() -> v4.NotebookNode:
    check = Check("mha.values", "mha", 10.0, "hidden", "数值", "values", lambda ctx: None)
    report = build_report([(check, Outcome(False, "错。", "Wrong.", ["missing-contiguous"]))])
    place = {"line": 57, "defines": "MultiHeadAttention", "before": "y = y.view(B, T, C)", "after": AFTER}
    fix = {**place, "edits": [place], "mistake": "missing-contiguous", "mistakes": ["missing-contiguous"],
           "checks": ["mha.values"], "points": 10.0,
           **{f"message_{lang}": message([place], ["mha.values"], 10.0, lang) for lang in ("zh", "en")}}
    report = {**report, "fixes": [fix]}
    cell = v4.new_code_cell("### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS",
                            outputs=[v4.new_output("stream", name="stdout",
                                                   text=part_text(report, "mha", 0.0, 10.0, [], []))])
    return v4.new_notebook(cells=[cell], metadata={"attention_kit": {"report": report}})


def page(until: str) -> str:
    nb, resources = WithholdFixCode(until=until).preprocess(autograded_notebook(), {})
    nb, resources = SanitizeFeedback().preprocess(nb, resources)
    body, _ = FeedbackPageExporter().from_notebook_node(nb, resources)
    return body


def test_before_the_day_the_page_gives_the_line_and_the_points_but_not_the_code():
    tomorrow = (TODAY + datetime.timedelta(days=1)).isoformat()
    body = page(tomorrow)
    assert AFTER not in body
    assert "只需改一行即可多得 10 分：定义 `MultiHeadAttention` 的单元格第 57 行" in body
    assert f"改好的代码 {tomorrow} 起在反馈里给出" in body
    assert f"the corrected code is shown in feedback from {tomorrow}" in body


@pytest.mark.parametrize("until", [TODAY.isoformat(), (TODAY - datetime.timedelta(days=1)).isoformat(), ""],
                         ids=["the day itself", "after the day", "no day set"])
def test_from_the_day_on_the_page_shows_the_code(until):
    body = page(until)
    assert body.count(AFTER) == 2 and "在反馈里给出" not in body  # the zh and the en line


def test_a_day_that_is_not_a_date_is_refused():
    with pytest.raises(TraitError, match="YYYY-MM-DD"):
        WithholdFixCode(until="20.12.2026")


def test_the_course_runs_the_step_before_the_page_is_sanitized():
    """nbgrader_config.py lists the step for generate_feedback, off (empty) until the course sets a day."""
    class Config(dict):
        def __getattr__(self, name):
            return self.setdefault(name, Config())

        def __setattr__(self, name, value):
            self[name] = value

    config = Config()
    runpy.run_path(str(ROOT / "nbgrader_config.py"), init_globals={"get_config": lambda: config})
    steps = [step.rsplit(".", 1)[1] for step in config.GenerateFeedback.preprocessors]
    assert steps.index("WithholdFixCode") < steps.index("SanitizeFeedback")
    assert config.WithholdFixCode.until == ""
