"""Step: the course's own words (grader/build/config.py COURSE_TEXT) in place of their placeholders."""
from __future__ import annotations

from nbformat import NotebookNode

from grader.build.config import COURSE_TEXT


def filled(text: str) -> str:
    for placeholder, words in COURSE_TEXT.items():
        text = text.replace(placeholder, words)
    return text


def course_text(nb: NotebookNode, path: str) -> NotebookNode:
    for cell in nb.cells:
        cell.source = filled(cell.source)
    return nb
