"""Are the self-check files every exercise shares (its pytest loader, test module, and its selfcheck.py's failures,
rules, runner and report) written from one source, each exercise's copy naming only its own notebook, variable and parts?"""
import pytest

from grader.build.inline_selfcheck import selfcheck_source
from grader.build.shared_selfcheck import shared_file
from grader.exercises import exercise
from support.paths import ROOT

pytestmark = pytest.mark.unit

PLACEHOLDERS = ("EXERCISE_NAME", "EXERCISE_IMPL", "PART_MARKERS")

# what each published copy must say: its notebook, the variable that picks another file, how to run one part
OWN_WORDS = {
    "attention": ("attention.ipynb", "ATTENTION_IMPL", "`-m part1` or `-m part2`"),
    "kv_cache": ("kv_cache.ipynb", "KV_CACHE_IMPL", "`-m part1`, `-m part2` or `-m part3`"),
}


def test_the_shared_files_have_one_source_and_no_exercise_keeps_a_copy():
    for template in ("conftest.py", "test_exercise.py"):
        assert (ROOT / "source/selfcheck" / template).is_file(), template
    for name in OWN_WORDS:
        assert not (ROOT / f"source/{name}/conftest.py").exists()
        assert not (ROOT / f"source/{name}/test_{name}.py").exists()


@pytest.mark.parametrize("name", list(OWN_WORDS))
def test_each_copy_is_filled_in_with_its_own_exercise(name):
    """(tests/publishing/test_build.py holds the committed copies to what the build writes.)"""
    notebook, variable, markers = OWN_WORDS[name]
    conftest = shared_file(exercise(name), "conftest.py").decode("utf-8")
    tests = shared_file(exercise(name), f"test_{name}.py").decode("utf-8")
    for text in (conftest, tests):
        assert not [p for p in PLACEHOLDERS if p in text], "a placeholder left in the published file"
        assert f"{markers} " in text or f"{markers}:" in text, "how to run one part"
    assert f'"{notebook}"' in conftest and f'os.environ.get("{variable}")' in conftest
    others = [other for other in OWN_WORDS if other != name]
    assert not [other for other in others if OWN_WORDS[other][1] in conftest or f"{other}.ipynb" in conftest]



@pytest.mark.parametrize("name", list(OWN_WORDS))
def test_each_self_check_runs_the_one_shared_runner_and_keeps_only_its_own_checks(name):
    """source/selfcheck/runner.py is the one source of running and reporting a part: each published selfcheck.py
    holds it once, between its markers, and no exercise's source defines it again."""
    runner = (ROOT / "source/selfcheck/runner.py").read_text(encoding="utf-8")
    own = (ROOT / f"source/{name}/selfcheck.py").read_text(encoding="utf-8")
    published = selfcheck_source(name)
    for definition in ("def run_part(", "def explain_failure(", "def part_summary(", "def selfcheck_notebook("):
        assert definition in runner and definition not in own, definition
        assert published.count(definition) == 1, definition
    assert runner.strip("\n") in published
    for hook in ("def before_part(part, namespace):", "def one_mistake_explains(results):"):
        assert hook in own, f"source/{name}/selfcheck.py lacks the runner's hook {hook}"


@pytest.mark.parametrize("name", list(OWN_WORDS))
def test_each_self_check_fails_and_reads_the_rules_through_the_one_shared_source(name):
    """How a check fails (source/selfcheck/failures.py) and the grading rules read in the code
    (source/selfcheck/rules.py) are one source: each published selfcheck.py holds each once, and no exercise's
    source defines them again (two copies had drifted apart: the second lab's read fewer rules)."""
    own = (ROOT / f"source/{name}/selfcheck.py").read_text(encoding="utf-8")
    published = selfcheck_source(name)
    pieces = {"failures.py": ("class SelfCheckFailure(", "def _fail(", "def _call(", "def _student_line(",
                              "def _own_error(", "def provided_cell_skipped(", "def _close("),
              "rules.py": ("def _breach(", "def _device_text(", "def _graded_code(", "def check_rules(")}
    for file, definitions in pieces.items():
        shared = (ROOT / "source/selfcheck" / file).read_text(encoding="utf-8")
        assert shared.strip("\n") in published, file
        for definition in definitions:
            assert definition in shared and definition not in own, definition
            assert published.count(definition) == 1, definition
