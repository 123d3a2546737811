"""Feedback step: the LaTeX in markdown cells becomes plain text, since the page may run no MathJax.

Feedback pages forbid every script (feedback_page_policy), so `$\\sqrt{d_k}$` would show as raw
LaTeX. Each `$...$` and `$$...$$` outside code spans and code blocks is rewritten as text with
`<sub>`/`<sup>` (tags the sanitizer keeps): `$S = QK^\\top / \\sqrt{d_k}$` reads
S = QK<sup>⊤</sup> / √d<sub>k</sub>. It knows the handful of forms the exercise's prose uses
(roots, fractions, `\\mathrm`/`\\text`, sub- and superscripts, common symbols); any other command
is shown by its name, never with a backslash. Runs before SanitizeFeedback, which cleans whatever
this writes as it cleans the rest of the cell.
"""
from __future__ import annotations

import re

from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

SYMBOLS = {
    "top": "⊤", "infty": "∞", "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥",
    "neq": "≠", "ne": "≠", "approx": "≈", "in": "∈", "to": "→", "rightarrow": "→", "sum": "∑", "prod": "∏",
    "sim": "∼", "ldots": "…", "dots": "…", "cdots": "⋯", "pm": "±", "alpha": "α", "beta": "β", "gamma": "γ",
    "epsilon": "ε", "lambda": "λ", "mu": "μ", "sigma": "σ", "theta": "θ", "pi": "π", "exp": "exp", "log": "log",
    "max": "max", "min": "min", "softmax": "softmax", "left": "", "right": "", "big": "", "Big": "",
    "!": "", ",": " ", ";": " ", ":": " ", " ": " ", "quad": " ", "qquad": " ",
    "_": "_", "{": "{", "}": "}", "%": "%", "$": "$", "#": "#", "&": "&", "|": "‖", "\\": " ",
}
"""Commands that stand for one symbol (or for nothing: spacing, \\left and \\right)."""
DOUBLE_STRUCK = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ"}
MAX_DEPTH = 40
"""Deeper brace nesting than prose math ever needs: such a span is left as written (a student's markdown
could nest thousands deep to exhaust the recursion)."""
MATH = re.compile(r"(?<!\\)\$\$(.+?)(?<!\\)\$\$|(?<![\\$])\$(?!\s)([^$\n]+?)(?<![\s\\])\$(?!\d)", re.DOTALL)
CODE = re.compile(r"(^```.*?^```[ \t]*$|^~~~.*?^~~~[ \t]*$|`+[^`]*`+)", re.DOTALL | re.MULTILINE)
COMMAND = re.compile(r"\\([A-Za-z]+|.)")


class TooDeep(Exception):
    pass


class _Reader:
    """A cursor over one LaTeX span, rendering it to text with <sub>/<sup>."""

    def __init__(self, latex: str):
        self.text, self.at = latex, 0

    def render(self, depth: int = 0, until: str | None = None) -> str:
        if depth > MAX_DEPTH:
            raise TooDeep
        out = []
        while self.at < len(self.text) and self.text[self.at] != until:
            out.append(self.item(depth))
        self.at += 1 if until else 0
        return "".join(out)

    def argument(self, depth: int) -> str:
        """A `{group}` or a single token, rendered."""
        while self.at < len(self.text) and self.text[self.at] == " ":
            self.at += 1
        return self.item(depth + 1)

    def item(self, depth: int) -> str:
        char = self.text[self.at] if self.at < len(self.text) else ""
        if char == "{":
            self.at += 1
            return self.render(depth + 1, until="}")
        if char in "_^":
            self.at += 1
            tag = "sub" if char == "_" else "sup"
            return f"<{tag}>{self.argument(depth)}</{tag}>"
        if char == "\\":
            found = COMMAND.match(self.text, self.at)
            if found:
                self.at = found.end()
                return self.command(found.group(1), depth)
        self.at += 1
        return char

    def command(self, name: str, depth: int) -> str:
        if name == "sqrt":
            return "√" + grouped(self.argument(depth))
        if name == "frac":
            top, bottom = self.argument(depth), self.argument(depth)
            return f"{grouped(top)}/{grouped(bottom)}"
        if name in ("text", "mathrm", "mathit", "mathbf", "operatorname", "textrm", "textbf"):
            return self.argument(depth)
        if name == "mathbb":
            letters = self.argument(depth)
            return "".join(DOUBLE_STRUCK.get(letter, letter) for letter in letters)
        if name in ("left", "right") and self.text[self.at:self.at + 1] == ".":
            self.at += 1
            return ""
        return SYMBOLS.get(name, name)


def grouped(rendered: str) -> str:
    """A root's or fraction's part as is when it reads as one token (d<sub>k</sub>, 2), else in parentheses."""
    plain = re.sub(r"</?su[bp]>", "", rendered)
    return rendered if re.fullmatch(r"√?[\w.∞⊤]+", plain) else f"({rendered})"


def plain_math(latex: str) -> str:
    """One LaTeX span as text with <sub>/<sup>; the span as written when it nests deeper than MAX_DEPTH."""
    try:
        return _Reader(latex).render().strip()
    except TooDeep:
        return latex


def without_math(markdown: str) -> str:
    """Markdown with every math span outside code rendered as text."""
    def convert(prose: str) -> str:
        return MATH.sub(lambda m: plain_math(m.group(1) if m.group(1) is not None else m.group(2)), prose)

    parts = CODE.split(markdown)
    return "".join(part if i % 2 else convert(part) for i, part in enumerate(parts))


class PlainMath(Preprocessor):
    """Rewrite the LaTeX math of markdown cells as plain text, for pages that run no MathJax."""

    enabled = Bool(True, help="Rewrite math as text in feedback pages (on unless configured off).").tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        if cell.cell_type == "markdown":
            source = cell.source if isinstance(cell.source, str) else "".join(map(str, cell.source))
            cell.source = without_math(source)
        return cell, resources
