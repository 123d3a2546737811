"""Does the grader's process parse student code safely from several threads (grade-all --jobs N)?

CPython 3.11's AST constructor keeps its recursion depth in state the threads share (gh-106905);
a finalizer that switches threads during a parse makes a concurrent parse fail with a SystemError,
which would cost a student the grade (grade-all saw it as "grading failed" on a cached rerun)."""
import gc
import sys
import threading
import time

import pytest

from support.paths import REFERENCE
from grader.handin import syntax_tree

pytestmark = pytest.mark.unit


class SwitchesThreadWhenCollected:
    def __del__(self):
        time.sleep(0)  # gives the GIL away in the middle of whatever allocation triggered the collection


def parse_in_threads(threads: int = 4, rounds: int = 200) -> list[BaseException]:
    source = REFERENCE.read_text(encoding="utf-8")
    errors: list[BaseException] = []

    def work():
        for _ in range(rounds):
            for _ in range(5):  # cycles the collector frees during the parse's own allocations
                garbage = SwitchesThreadWhenCollected()
                garbage.cycle = garbage
            try:
                syntax_tree.parse(source)
            except SystemError as error:
                errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return errors


def test_parsing_in_several_threads_while_finalizers_switch_threads_never_fails():
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(300, 1, 1)
    try:
        assert parse_in_threads() == []
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)


def test_a_syntax_error_is_still_raised():
    with pytest.raises(SyntaxError):
        syntax_tree.parse("def f(:\n")


@pytest.mark.parametrize("case", ["reference", "nesting", "match_and_fstrings"])
def test_the_list_walk_visits_what_ast_walk_visits_in_its_order(case):
    """The rules read `syntax_tree.walk`'s list where they called `ast.walk` several times: same nodes, same order."""
    import ast

    sources = {"reference": REFERENCE.read_text(encoding="utf-8"),
               "nesting": "X = " + "-" * 50 + "1\nX = x" + "[0]()" * 50 + "\nX = " + "lambda: " * 30 + "[" * 30 + "]" * 30 + "\n",
               "match_and_fstrings": "match x:\n    case torch.Tensor(is_meta=True) | [1, *rest]:\n"
                                     "        y = f'{a!r:>{w}}' + 'me' 'ta'\n"}
    tree = ast.parse(sources[case])
    assert [id(node) for node in syntax_tree.walk(tree)] == [id(node) for node in ast.walk(tree)]
