"""The grader's import graph, from the source text (nothing is imported): `python scripts/import_graph.py`.

Prints one line per module, `module (lines) -> grader modules it imports`, then the cycles and the
modules over the size budget. `--dot` prints Graphviz instead. Used to compare the architecture
before and after a restructuring (issue 13's closing note).
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "grader"
SIZE_BUDGET = 350


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """Grader modules imported anywhere in the file (function-local imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def graph() -> tuple[dict[str, set[str]], dict[str, int]]:
    files = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}
    modules = set(files)
    edges = {name: imports_of(path, modules) - {name} for name, path in files.items()}
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in files.items()}
    return edges, sizes


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target, stack + [target])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print Graphviz dot")
    edges, sizes = graph()
    if parser.parse_args().dot:
        print("digraph grader {\n  rankdir=LR;")
        for source, targets in sorted(edges.items()):
            for target in sorted(targets):
                print(f'  "{source}" -> "{target}";')
        print("}")
        return
    for name in sorted(edges):
        print(f"{name} ({sizes[name]}) -> {', '.join(sorted(edges[name])) or '-'}")
    print(f"\n{len(edges)} modules, {sum(map(len, edges.values()))} edges; "
          f"cycles: {cycles(edges) or 'none'}; over {SIZE_BUDGET} lines: "
          f"{', '.join(f'{n} ({s})' for n, s in sorted(sizes.items()) if s > SIZE_BUDGET) or 'none'}")


if __name__ == "__main__":
    main()
