"""Does every graded name live in its exercise's declaration alone (issue 45: adding an exercise is declaring it)?

No grader module outside grader/exercises/ holds a graded name of any exercise as a string constant: the shared
machinery reads names from the declaration. Read from the syntax tree, so a docstring or comment that mentions a name
is no constant of it. One constant is allowed, by where it is and why.
"""
from __future__ import annotations

import ast

import pytest

from support.paths import ROOT
from grader.exercises import every_graded_name

pytestmark = pytest.mark.unit

ALLOWED = {("grader/sandbox/worker.py", "scaled_dot_product_attention")}
"""PyTorch's own built-in attention, `F.scaled_dot_product_attention`, which the worker denies: torch's API name."""


def grader_sources() -> dict[str, str]:
    """Each grader module outside the declarations, by its path in the repository."""
    return {str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
            for path in sorted((ROOT / "grader").rglob("*.py"))
            if not str(path.relative_to(ROOT)).startswith("grader/exercises/")}


def named(sources: dict[str, str], names: set[str]) -> list[tuple[str, str]]:
    """(module, name) for each graded name a module holds as a string constant, but those ALLOWED."""
    found = []
    for where, text in sources.items():
        strings = {node.value for node in ast.walk(ast.parse(text))
                   if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        found += [(where, name) for name in sorted(strings & names) if (where, name) not in ALLOWED]
    return found


def test_no_grader_module_outside_the_declarations_holds_a_graded_name():
    names = set(every_graded_name())
    assert {"scaled_dot_product_attention", "MultiHeadAttention", "repeat_kv", "KVCache",
            "GroupedQueryAttention"} <= names
    assert named(grader_sources(), names) == []


def test_a_graded_name_written_into_a_module_is_found_and_a_docstring_is_not():
    """The scan sees a constant where one is (the cache probe once named its class `"KVCache"`)."""
    sources = {"grader/sandbox/cache_probes.py": '"""Probes a KVCache."""\nCLASS = "KVCache"\n',
               "grader/graph/gqa_answers.py": '"""GroupedQueryAttention\'s answer."""\n'}
    assert named(sources, {"KVCache", "GroupedQueryAttention"}) == [("grader/sandbox/cache_probes.py", "KVCache")]
