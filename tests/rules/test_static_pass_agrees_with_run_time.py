"""Does the static pass leave every honest hand-in's score as the run time alone gives it?

The static pass only explains a refusal on the student's line; it may never refuse what the run time
allows. Every honest hand-in in tests/ (the correct styles, the reference, the honest forgery twin, the
corpus files the float64 truth calls correct) gets full marks with the static pass on, and the pass finds
nothing in it: grading reads the pass only through `rules.violations`, so the score is the one the run time
alone gives (graded afresh without the pass wherever it does find something, to show both scores).
Also: a `%` continuation line in a notebook cell is Python, not a magic.
"""
import sys

import nbformat
import pytest

from support.paths import CORPUS, REFERENCE, ROOT, SUBMISSIONS
from grader.exercises.attention import MAX_SCORE
from grader.demo.class_notebooks import answered, answers_from_python, write

pytestmark = pytest.mark.sandbox

sys.path.insert(0, str(CORPUS))
from expected import ALL as CORPUS_VERDICTS  # noqa: E402
from grader.exercises.attention import EXERCISE

HONEST = sorted((SUBMISSIONS / "correct").glob("*.py")) + sorted((SUBMISSIONS / "forgery").glob("honest_*.py")) \
    + [REFERENCE] + [CORPUS / f"{name}.py" for name, entry in sorted(CORPUS_VERDICTS.items()) if not entry["fails"]]


@pytest.mark.parametrize("path", HONEST, ids=[f"{p.parent.name}/{p.stem}" for p in HONEST])
def test_the_static_pass_refuses_nothing_the_run_time_allows(graded, request, path):
    from grader import rules
    from grader.handin.source import load_submission

    both = graded(path)  # the session's report: the static pass on
    # Grading reads the static pass only through `rules.violations`: where it finds nothing, grading without it
    # is the same computation, so the run time alone is graded afresh only where the pass found something.
    found = rules.violations(load_submission(path).source, EXERCISE)
    run_time_alone = both
    if found:
        request.getfixturevalue("static_rules_off")
        run_time_alone = graded(path)
    assert both["score"] == run_time_alone["score"] == MAX_SCORE, (both["mistakes"], run_time_alone["mistakes"])
    assert both["mistakes"] == run_time_alone["mistakes"] == [], found
    assert found == [], found


def test_a_percent_continuation_line_in_a_notebook_cell_keeps_full_marks(graded, tmp_path):
    """NeMo's `% (hidden_size, num_attention_heads))` line, pasted into the Part 2 cell: Python, not a magic."""
    release = nbformat.read(ROOT / "release" / "attention" / "attention.ipynb", as_version=4)
    answers = answers_from_python(SUBMISSIONS / "correct" / "percent_continuation_line.py")
    assert any(line.lstrip().startswith("% (") for text in answers.values() for line in text.splitlines())
    report = graded(write(answered(release, answers), tmp_path / "attention.ipynb"))
    assert report["score"] == MAX_SCORE and report["mistakes"] == [], report["mistakes"]
