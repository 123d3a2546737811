"""Candidate fixes: the fix rewrites' splices (grader.fixes.rewrites) turned into whole edited lines of the
student's code, one candidate per mistake id.

A candidate is only a guess: grader.fixes regrades the edited copy in the sandbox and shows it only
if the checks say it helps. This module reads text only and never runs anything.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from grader.handin import syntax_tree
from grader.fixes.rewrites import REWRITES, Splice


@dataclass(frozen=True)
class LineEdit:
    line: int  # line of the extracted module (Submission.locate maps it to the notebook)
    before: str
    after: str


@dataclass(frozen=True)
class Candidate:
    """One mistake's mechanical fix: every line that shows it, edited together (a renamed
    parameter must be renamed where it is read too)."""

    mistake: str
    edits: tuple[LineEdit, ...]
    also: tuple[str, ...] = ()  # the other mistakes a joint fix mends (grader.fixes.jointly)

    def apply(self, source: str) -> str:
        lines = source.split("\n")
        for edit in self.edits:
            lines[edit.line - 1] = edit.after
        return "\n".join(lines)


MAX_EDITED_LINES = 8
"""A mechanical fix touches a few lines; one touching more is no one-line lesson (nor a message to show)."""
MAX_LINE_CHARS = 300
"""Nor is an edit of a line longer than this."""


def _spliced(line: str, splices: list[Splice]) -> str | None:
    """The line with its splices applied in one pass (linear in the line), or None if two overlap."""
    raw, pieces, at = line.encode("utf-8"), [], 0
    for splice in sorted(set(splices), key=lambda s: (s.start, s.end)):
        if splice.start < at:
            return None
        pieces += [raw[at:splice.start], splice.text.encode("utf-8")]
        at = splice.end
    return b"".join(pieces + [raw[at:]]).decode("utf-8", errors="replace")


def from_splices(mistake: str, lines: list[str], splices: list[Splice]) -> Candidate | None:
    by_line: dict[int, list[Splice]] = {}
    for splice in splices:
        by_line.setdefault(splice.line, []).append(splice)
    if len(by_line) > MAX_EDITED_LINES:
        return None
    edits = []
    for number, group in sorted(by_line.items()):
        after = _spliced(lines[number - 1], group)
        if after is None or len(after) > MAX_LINE_CHARS:
            return None
        if after != lines[number - 1] and "\n" not in after:
            edits.append(LineEdit(number, lines[number - 1], after))
    return Candidate(mistake, tuple(edits)) if edits else None


def candidates(source: str, mistakes: list[str], parts: dict[str, list[str]], graded_name: dict[str, str]) -> list[Candidate]:
    """One candidate per mistake id with a rule that proposes an edit, in the order of `mistakes`.
    `parts`: mistake id -> the parts whose checks it failed (its edits stay in those parts' code); `graded_name`: the
    exercise's part id -> the name it grades."""
    try:
        tree = syntax_tree.parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source.split("\n")
    encoded = [line.encode("utf-8") for line in lines]
    graded = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    found = []
    for mistake in mistakes:
        rule = REWRITES.get(mistake)
        if rule is None:
            continue
        names = [graded_name[p] for p in parts.get(mistake) or graded_name if p in graded_name]
        splices = [s for name in names if name in graded for s in rule(encoded, graded[name])]
        candidate = from_splices(mistake, lines, splices)
        if candidate is not None and candidate not in found:
            found.append(candidate)
    return found
