"""Does a worker compile the submission's guarded code once, however many worlds load it? The rewrite and the compile
of each statement depend on the text alone; each world runs that code in a namespace of its own."""
import pytest

from support.paths import REFERENCE
from grader.sandbox import worker
from grader.sandbox.guard import Guard

pytestmark = pytest.mark.unit


def test_a_second_load_runs_the_same_code_compiled_once_in_a_namespace_of_its_own(monkeypatch):
    compiles = []
    compile_statement = worker.compiled
    monkeypatch.setattr(worker, "compiled", lambda *args: compiles.append(args) or compile_statement(*args))
    monkeypatch.setattr(worker, "_COMPILED", {})
    source, guard = REFERENCE.read_text(encoding="utf-8"), Guard()
    first, errors = worker.load_student(source, guard)
    statements = len(compiles)
    second, again = worker.load_student(source, guard)
    assert errors == again == [] and statements > 3 and len(compiles) == statements
    assert first is not second and first["MultiHeadAttention"] is not second["MultiHeadAttention"]
    assert first["scaled_dot_product_attention"].__code__ is second["scaled_dot_product_attention"].__code__
    worker.load_student(source + "\n# another text\n", guard)
    assert len(compiles) == 2 * statements, "another text is compiled afresh"
