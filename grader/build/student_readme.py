"""Step: the students' README, published beside their notebook, its Colab link pointing at that notebook."""
from __future__ import annotations

from grader.build.colab_badge import colab_url
from grader.build.config import ASSIGNMENT, COLAB_PLACEHOLDER, ROOT

SOURCE = f"source/{ASSIGNMENT}/README.md"
TARGET = f"release/{ASSIGNMENT}/README.md"


def student_readme() -> bytes:
    text = (ROOT / SOURCE).read_text(encoding="utf-8")
    link = f"]({COLAB_PLACEHOLDER})"
    if link not in text:
        raise ValueError(f"{SOURCE}: no link to ({COLAB_PLACEHOLDER}) for the notebook's Colab URL")
    return text.replace(link, f"]({colab_url(f'release/{ASSIGNMENT}/{ASSIGNMENT}.ipynb')})").encode("utf-8")
