"""Does the LaTeX of the notebook's prose read as plain text in feedback pages, which run no MathJax?"""
from __future__ import annotations

import re

import nbformat
from nbformat.v4 import new_markdown_cell, new_notebook

from grader.build.config import ROOT, SOURCE_NOTEBOOK
from grader.nbgrader.plain_math import MAX_DEPTH, PlainMath, plain_math, without_math
from grader.nbgrader.sanitize_feedback import SanitizeFeedback

import pytest

pytestmark = pytest.mark.unit


def test_the_forms_the_exercise_uses_read_as_text():
    """Are roots, fractions, \\mathrm, sub- and superscripts and symbols written as text with <sub>/<sup>?"""
    assert plain_math(r"S = QK^\top / \sqrt{d_k}") == "S = QK<sup>⊤</sup> / √d<sub>k</sub>"
    assert plain_math(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right)V") \
        == "Attention(Q, K, V) = softmax(QK<sup>⊤</sup>/√d<sub>k</sub> + M)V"
    assert plain_math(r"\sqrt{\text{head\_dim}}") == "√head_dim"
    assert plain_math(r"e^{-\infty} = 0") == "e<sup>-∞</sup> = 0"
    assert plain_math(r"x \in \mathbb{R}^{T \times d}") == "x ∈ ℝ<sup>T × d</sup>"
    assert plain_math(r"\frac{a + b}{2}") == "(a + b)/2"
    assert plain_math(r"\unknown{x}") == "unknownx"  # never a backslash


def test_no_latex_is_left_in_the_notebooks_prose():
    """After the step, does no markdown cell of the source notebook hold a $ span or a LaTeX command outside code?"""
    nb = nbformat.read(ROOT / SOURCE_NOTEBOOK, as_version=4)
    prose = [cell.source for cell in nb.cells if cell.cell_type == "markdown"]
    assert any("\\sqrt" in text for text in prose)  # the notebook does use math
    for text in prose:
        outside_code = re.sub(r"```.*?```|`[^`]*`", "", without_math(text), flags=re.DOTALL)
        assert "$" not in outside_code and not re.search(r"\\[A-Za-z]", outside_code), outside_code[:200]


def test_code_and_prices_are_left_as_written():
    """Are code spans, code blocks and a sentence with two prices untouched?"""
    text = "Costs $5 and $10. `$x_1$` stays\n\n```\ny = $a$\n```\n"
    assert without_math(text) == text


def test_deep_nesting_is_left_as_written_not_a_crash():
    """Does a span nested deeper than MAX_DEPTH (a student's attempt to exhaust the recursion) stay as written?"""
    hostile = "{" * 50_000 + "x" + "}" * 50_000
    assert without_math(f"${hostile}$") == hostile
    assert plain_math("{" * MAX_DEPTH + "x" + "}" * MAX_DEPTH) == "x"


def test_markup_a_student_hides_in_math_is_still_sanitized():
    """Run in the feedback order (this step, then SanitizeFeedback), is a script written inside $...$ gone?"""
    nb = new_notebook(cells=[new_markdown_cell("see $<script>alert(1)</script> \\sqrt{x}$ and $<img src=x onerror=alert(1)>$")])
    for step in (PlainMath(), SanitizeFeedback()):  # called as nbconvert calls a configured preprocessor
        nb, _ = step(nb, {})
    source = nb.cells[0].source
    assert "<script" not in source and "onerror" not in source and "√x" in source
