"""Step: the students' README, published beside their notebook: its Colab link pointing at that notebook, its
download link at the published repository's zip, and the course's own words."""
from __future__ import annotations

from grader.build.colab_badge import colab_url
from grader.build.config import COLAB_BRANCH, COLAB_PLACEHOLDER, COLAB_REPO, ROOT, ZIP_PLACEHOLDER
from grader.build.course_text import filled


def source(assignment: str) -> str:
    return f"source/{assignment}/README.md"


def target(assignment: str) -> str:
    return f"release/{assignment}/README.md"


def repository_zip_url() -> str:
    """GitHub's download of the whole published repository (a folder alone has no download)."""
    return f"https://github.com/{COLAB_REPO}/archive/refs/heads/{COLAB_BRANCH}.zip"


def student_readme(assignment: str) -> bytes:
    text = filled((ROOT / source(assignment)).read_text(encoding="utf-8"))
    for placeholder, what, url in (
            (COLAB_PLACEHOLDER, "the notebook's Colab URL", colab_url(f"release/{assignment}/{assignment}.ipynb")),
            (ZIP_PLACEHOLDER, "the download of the repository", repository_zip_url())):
        link = f"]({placeholder})"
        if link not in text:
            raise ValueError(f"{source(assignment)}: no link to ({placeholder}) for {what}")
        text = text.replace(link, f"]({url})")
    return text.encode("utf-8")
