"""The grader's layers, as docs/developing.md's package table declares them: each top-level module or package
imports only the units its row lists, function-local imports included, so no arrow points up and none closes
a cycle. Read from the source text; nothing is imported."""
import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

from support.paths import ROOT
GRADER = ROOT / "grader"
TABLE = re.compile(r"<!-- package-table -->\n(.*?)<!-- end package-table -->", re.S)


def declared_rows() -> dict[str, set[str]]:
    """Unit (a top-level module's stem or a package's name) -> the units it may import."""
    table = TABLE.search((ROOT / "docs" / "developing.md").read_text(encoding="utf-8")).group(1)
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        unit = cells[0].strip("`").removesuffix(".py").removesuffix("/")
        rows[unit] = {name.strip() for name in cells[2].split(",") if name.strip()}
    return rows


def unit_of(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def imported_units(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [f"grader.{a.name}" for a in node.names] if node.module == "grader" else [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        found |= {unit_of(m) for m in modules if m.startswith("grader.")}
    return found


def actual_units() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in GRADER.rglob("*.py"):
        relative = path.relative_to(GRADER)
        unit = relative.parts[0].removesuffix(".py")
        if unit != "__init__":
            graph.setdefault(unit, set()).update(imported_units(path) - {unit})
    return graph


def test_every_module_and_package_has_a_row():
    assert set(declared_rows()) == set(actual_units())


def test_each_unit_imports_only_what_its_row_lists():
    declared = declared_rows()
    upward = {unit: sorted(imports - declared[unit]) for unit, imports in actual_units().items()
              if imports - declared.get(unit, set())}
    assert upward == {}, "imports docs/developing.md's package table does not allow"


def test_the_declared_layers_have_no_cycle():
    declared, done, on_path = declared_rows(), set(), []

    def visit(unit):
        assert unit not in on_path, " -> ".join(on_path + [unit])
        if unit not in done:
            on_path.append(unit)
            for below in declared.get(unit, ()):
                visit(below)
            on_path.pop()
            done.add(unit)

    for unit in declared:
        visit(unit)


def test_the_top_level_holds_at_most_ten_modules_and_none_is_over_350_lines():
    assert len(list(GRADER.glob("*.py"))) <= 10
    assert [str(p.relative_to(ROOT)) for p in GRADER.rglob("*.py") if len(p.read_text().splitlines()) > 350] == []
