"""Do README.md and the docs pages point only at what exists?

Every relative link resolves to a file of the repository and, where it names a `#anchor`, to a heading of
that page (GitHub's anchor for it); every command line of a `bash` block starts with something that exists:
an executable on PATH or in .venv/bin, a path of the repository, or `make` with one of the Makefile's targets.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.unit

PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*```")
ASSIGNMENT_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
SHELL_BUILTINS = {"export", "cd"}  # `export PATH="$PWD/.venv/bin:$PATH"`


def outside_code(text: str) -> list[str]:
    """The page's lines outside fenced blocks, with inline code removed (a link in backticks is not a link)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces to hyphens."""
    headings = [line.lstrip("#").strip() for line in outside_code(page.read_text(encoding="utf-8"))
                if re.match(r"^#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def relative_links(page: Path) -> list[str]:
    found = [target for line in outside_code(page.read_text(encoding="utf-8")) for target in LINK.findall(line)]
    return [target for target in found if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def broken(page: Path, target: str) -> str | None:
    """Why `target`, a link on `page`, leads nowhere; None when it resolves."""
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists() or ROOT not in file.parents and file != ROOT:
        return f"{target}: no such file"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{target}: {file.relative_to(ROOT)} has no heading #{anchor}"
    return None


def command_lines(page: Path) -> list[str]:
    """The command lines of the page's bash blocks: no comments, no continuation of a line before."""
    commands, language, continued = [], None, False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            language = None if language is not None else (line.strip()[3:].strip() or "text")
            continued = False
            continue
        if language not in ("bash", "sh", "shell") or not line.strip() or line.lstrip().startswith("#"):
            continue
        if not continued:
            commands.append(line.strip())
        continued = line.rstrip().endswith("\\")
    return commands


def make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return {name for line in makefile.splitlines() if (m := re.match(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", line))
            for name in m[1].split()}


def missing_program(command: str) -> str | None:
    """Why the command's first word does not exist here; None when it does."""
    words = re.sub(r"\s+#.*$", "", command).split()
    while words and ASSIGNMENT_WORD.match(words[0]):  # `DB=… .venv/bin/nbgrader …`
        words = words[1:]
    if not words:  # `DB=…` alone sets a shell variable
        return None
    first = words[0]
    if first == "make":
        goals = [word for word in words[1:] if not word.startswith("-") and not ASSIGNMENT_WORD.match(word)]
        unknown = [goal for goal in goals if goal not in make_targets()]
        return f"{command}: no make target {unknown[0]}" if unknown else None
    if "/" in first:
        return None if (ROOT / first).exists() else f"{command}: no {first} in the repository"
    if first in SHELL_BUILTINS or shutil.which(first) or (ROOT / ".venv" / "bin" / first).exists():
        return None
    return f"{command}: {first} is neither on PATH nor in .venv/bin"


def test_the_pages_exist():
    """The pages README.md sends each reader to: the set the link check walks is not empty by accident."""
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    assert {"docs/instructors/grading.md", "docs/instructors/lms.md", "docs/reading-a-report.md",
            "docs/developing.md", "docs/isolation.md", "docs/instructors/where-grading-runs.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    links = relative_links(page)
    problems = [problem for target in links if (problem := broken(page, target))]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_command_starts_with_something_that_exists(page):
    problems = [problem for command in command_lines(page) if (problem := missing_program(command))]
    assert not problems, "\n".join(problems)


def test_the_checks_see_a_broken_link_and_a_missing_command(tmp_path):
    """The checkers themselves: a page with a dead file, a dead anchor and an unknown program is refused."""
    page = ROOT / "docs" / "developing.md"
    assert broken(page, "no-such-page.md") and broken(page, "isolation.md#no-such-heading")
    assert broken(page, "#a-gpu-machine") is None and broken(page, "../README.md#who-are-you") is None
    assert missing_program("no-such-program --flag") and missing_program("make no-such-target")
    assert missing_program("make build") is None and missing_program("DB=x .venv/bin/python -m grader") is None
    assert missing_program('export PATH="$PWD/.venv/bin:$PATH"') is None
