"""Which exercise does a hand-in answer, where no verb said: its file name first, then the graded names its code
defines, then the first declared exercise. A second exercise is declared here for the test alone."""
import pytest

from grader import exercises
from grader.exercises import Exercise, Part
from grader.exercises.attention import EXERCISE as ATTENTION
from grader.handin import exercise_of as module
from grader.handin.source import submission_from_cells

pytestmark = pytest.mark.unit

SECOND = Exercise("kv_cache", (Part("repeat", 1, "repeat_kv", "", "repeat", "repeat_tests", 4.0, "part1"),
                               Part("gqa", 2, "GroupedQueryAttention", "", "gqa", "gqa_tests", 16.0, "part2")),
                  ("imports",), "import torch", ("import torch",), ())
SECOND_CODE = "def repeat_kv(x, n_rep):\n    return x\n\nclass GroupedQueryAttention:\n    pass\n"
FIRST_CODE = "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    return Q, K\n"


@pytest.fixture
def two_exercises(monkeypatch):
    monkeypatch.setattr(module, "exercises", lambda: (ATTENTION, SECOND))


@pytest.mark.parametrize("name", ["kv_cache.ipynb", "Copy of kv_cache (2).ipynb", "kv_cache.ipynb 的副本",
                                  "alice_kv_cache.ipynb", "s123_Copy of kv_cache (1).ipynb", "kv_cache.py"])
def test_the_file_name_says_which_exercise_whatever_the_code_defines(two_exercises, name):
    assert module.exercise_of(name, [FIRST_CODE]) is SECOND


@pytest.mark.parametrize("name", ["homework.ipynb", "alice.py", "kv_cache_notes.ipynb", "attention_kv_cache_x.py"])
def test_a_name_that_says_nothing_leaves_it_to_the_graded_names_the_code_defines(two_exercises, name):
    assert module.exercise_of(name, [FIRST_CODE, SECOND_CODE]) is SECOND
    assert module.exercise_of(name, [FIRST_CODE]) is ATTENTION


def test_code_that_defines_no_graded_name_is_the_first_declared_exercises(two_exercises):
    assert module.exercise_of("empty.py", ["x = 1"]) is ATTENTION
    assert module.exercise_of("empty.py", []) is ATTENTION


def test_a_reading_keeps_what_the_exercise_it_answers_grades_and_prepends_its_provided_code(two_exercises):
    submission = submission_from_cells([FIRST_CODE + "\nprint('plot')\n", SECOND_CODE], "alice_kv_cache.ipynb")
    assert submission.exercise is SECOND
    assert submission.source.splitlines()[0] == "import torch"  # SECOND's provided code, not attention's
    assert "def repeat_kv" in submission.source and "def scaled_dot_product_attention" not in submission.source
    told = submission_from_cells([FIRST_CODE, SECOND_CODE], "alice_kv_cache.ipynb", exercise=ATTENTION)
    assert told.exercise is ATTENTION and "def scaled_dot_product_attention" in told.source


def test_the_declared_exercises_are_looked_up_by_name():
    assert exercises.exercise("attention") is ATTENTION
    with pytest.raises(KeyError):
        exercises.exercise("kv_cache_v2")
