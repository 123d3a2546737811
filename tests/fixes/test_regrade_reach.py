"""Does a fix's regrade run only the parts its edit can reach, and report exactly what a full regrade reports?

grader.fixes.reach reads which top-level definitions a changed line lies in and which parts can call them; the
regrade runs those parts' checks and keeps the original's verdicts for the others (grader.grade.Grading.regrade).
The reading is shown on small programs; the regrade on real mutants, against a regrade of every part.
"""
import json

import pytest

from support.paths import SUBMISSIONS
from grader import grade as grade_module
from grader.fixes import reach
from grader.grade import grade_submission
from grader.exercises.attention import EXERCISE

SDPA_ONLY = '''import torch

def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scores = Q @ K.mT
    return scores.softmax(-1) @ V, scores

class MultiHeadAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return q
'''

REGISTERED = SDPA_ONLY.replace("def scaled_dot_product_attention", "@kept\ndef scaled_dot_product_attention").replace(
    "        return q\n", "        return _ATTENTION[0](q, k, v)[0]\n").replace("import torch\n", """import torch

_ATTENTION = []


def kept(function):
    _ATTENTION.append(function)
    return function
""")
"""Part 1 registered by a decorator, Part 2 calling it through the registry: no definition names the other."""


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.unit
def test_an_edit_inside_one_part_reaches_that_part_alone():
    assert reach.parts_reached(SDPA_ONLY, edit(SDPA_ONLY, "Q @ K.mT", "Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa"}
    assert reach.parts_reached(SDPA_ONLY, edit(SDPA_ONLY, "return q", "return q * 1"), EXERCISE.graded_name) == {"mha"}


@pytest.mark.unit
def test_an_edit_reaches_every_part_that_can_call_it():
    calls = edit(SDPA_ONLY, "return q\n", "return scaled_dot_product_attention(q, k, v)[0]\n")
    assert reach.parts_reached(calls, edit(calls, "Q @ K.mT", "Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa", "mha"}
    helper = edit(SDPA_ONLY, "    scores = Q @ K.mT\n", "    scores = scores_of(Q, K)\n") + "\ndef scores_of(Q, K):\n    return Q @ K.mT\n"
    assert reach.parts_reached(helper, edit(helper, "return Q @ K.mT", "return Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa"}
    through = edit(helper, "return q\n", "return q + shift(q)\n") + "\ndef shift(x):\n    return scores_of(x, x)[..., :1]\n"
    assert reach.parts_reached(through, edit(through, "return Q @ K.mT", "return Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa", "mha"}


@pytest.mark.unit
@pytest.mark.parametrize("program, old, new", [
    (SDPA_ONLY + "SCALE = 1.0\n", "SCALE = 1.0", "SCALE = 0.5"),  # code run at load
    (SDPA_ONLY + "\ndef build():\n    return 1\n\nBUILT = build()\n", "return 1", "return 2"),  # called at load
    (SDPA_ONLY, "    scores = Q @ K.mT\n", "    scores = Q @ K.mT\n  oops(\n"),  # no longer parses
    (SDPA_ONLY, "\nclass MultiHeadAttention", "\nEXTRA = 1\nclass MultiHeadAttention"),  # a line added between two
    (REGISTERED, "Q @ K.mT\n", "Q @ K.mT / 8\n"),  # its object handed to a decorator, which keeps it for Part 2
    (REGISTERED.replace("@kept\ndef scaled_dot_product_attention", "def scaled_dot_product_attention").replace(
        "class MultiHeadAttention(torch.nn.Module):\n", "class MultiHeadAttention(torch.nn.Module):\n    @kept\n"
        "    def helper(self):\n        return 1\n\n"), "return 1", "return 2"),  # a method's, by the class body
    (SDPA_ONLY.replace("class MultiHeadAttention(torch.nn.Module):", "class MultiHeadAttention(torch.nn.Module, "
                       "metaclass=Kept):"), "return q\n", "return q * 1\n"),  # a class's, by its metaclass
], ids=["module-level", "called-at-load", "unparsable", "inserted-between", "decorated", "decorated-method",
        "metaclass"])
def test_an_edit_that_runs_at_load_or_cannot_be_read_reaches_every_part(program, old, new):
    assert reach.parts_reached(program, edit(program, old, new), EXERCISE.graded_name) == {"sdpa", "mha"}


def _checks_run(monkeypatch) -> list[set[str]]:
    """The parts each grading of the test ran checks of, recorded as `_run_checks` is called."""
    seen, run = [], grade_module._run_checks

    def recorded(submission, checks, *args, **kwargs):
        seen.append({check.part for check in checks})
        return run(submission, checks, *args, **kwargs)

    monkeypatch.setattr(grade_module, "_run_checks", recorded)
    return seen


@pytest.mark.sandbox
@pytest.mark.parametrize("mutant, fixed_part", [("wrong-scale", "sdpa"), ("mask-not-buffer", "mha")])
def test_a_fixs_regrade_runs_the_part_it_edits_and_reports_what_a_full_regrade_reports(monkeypatch, mutant, fixed_part):
    path = SUBMISSIONS / "mutants" / f"{mutant}.py"
    monkeypatch.delenv("ATTENTION_KIT_REPORT_CACHE", raising=False)
    runs = _checks_run(monkeypatch)
    report = grade_submission(path)
    assert [f["mistake"] for f in report["fixes"]] == [mutant]
    assert runs[0] == {"sdpa", "mha"} and runs[1:] and all(parts == {fixed_part} for parts in runs[1:]), runs
    monkeypatch.setattr(reach, "parts_reached", lambda before, after, graded_name: {"sdpa", "mha"})
    assert json.dumps(grade_submission(path), sort_keys=True) == json.dumps(report, sort_keys=True)
