"""The suite's own layout: tests in a folder per concern, what they share in tests/support/, and no test reaching
into another test module or into conftest.py (which holds fixtures and hooks only)."""
import ast

import pytest

from support.paths import TESTS

pytestmark = pytest.mark.unit

TEST_FILES = sorted(TESTS.rglob("test_*.py"))
OWN_CODE = [p for p in TESTS.rglob("*.py") if not p.relative_to(TESTS).parts[0] in ("submissions", "corpus")]


def imported_modules(path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_every_test_file_is_in_a_concern_folder():
    assert TEST_FILES and [p.name for p in TEST_FILES if p.parent == TESTS] == []


def test_no_module_imports_a_test_module_or_conftest():
    reaching = {str(p.relative_to(TESTS)): sorted(m for m in imported_modules(p)
                                                  if m == "conftest" or m.split(".")[-1].startswith("test_"))
                for p in OWN_CODE}
    assert {path: modules for path, modules in reaching.items() if modules} == {}
