"""Is every exercise found by its assignment's name, with its own source, and no other name answered?"""
import pytest

from grader import exercises
from grader.checks import checks_for
from grader.errors import NoGraders
from grader.exercises import Exercise, Part
from support.paths import ROOT

pytestmark = pytest.mark.unit


def test_an_exercise_is_found_by_its_assignment_name():
    attention = exercises.exercise("attention")
    assert attention.name == "attention"
    assert attention.graded_names == ("scaled_dot_product_attention", "MultiHeadAttention")
    assert [part.id for part in attention.parts] == ["sdpa", "mha"]
    assert attention.max_score == 20.0
    assert attention.part["mha"].tests_cell == "mha_tests"


def test_a_name_no_exercise_declares_is_refused_with_the_declared_ones():
    with pytest.raises(KeyError, match="attention"):
        exercises.exercise("attention.ipynb")


@pytest.mark.parametrize("exercise", exercises.exercises(), ids=lambda e: e.name)
def test_each_exercise_has_its_source_notebook_and_self_check(exercise):
    assert (ROOT / exercise.source_notebook).is_file()
    for name in exercise.selfcheck_files:
        assert (ROOT / "source" / exercise.name / name).is_file(), name
    numbers = [part.number for part in exercise.parts]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(set(exercise.graded_names)) == len(exercise.parts)


def test_an_exercise_whose_parts_lack_graders_is_refused_whole_naming_what_is_missing():
    """A lab being written grades nothing rather than the parts that happen to have checks."""
    attention = exercises.exercise("attention")
    half = Exercise("half", (attention.parts[0], Part("unwritten", 2, "Later", "", "later", "later_tests", 5.0, "part2")),
                    (), "", (), ())
    with pytest.raises(NoGraders, match="grader/checks/unwritten/"):
        checks_for(exercise=half)
    assert [c.part for c in checks_for("sdpa")] == ["sdpa"] * len(checks_for("sdpa"))
