"""Build configuration: the one place for paths and the Colab repository."""
from __future__ import annotations

from grader.process import ROOT  # noqa: F401 (the build's modules read it here, with the other paths)

ASSIGNMENT = "attention"
SOURCE_NOTEBOOK = f"source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"

COLAB_PLACEHOLDER_REPO = "attention-kit/attention-kit"
"""What COLAB_REPO says until an instructor sets it: `make build` warns loudly while they are equal."""
COLAB_REPO = COLAB_PLACEHOLDER_REPO
"""GitHub `owner/name` of the public repository that students open in Colab.

It must hold the published folders at the same paths as here (`release/attention/attention.ipynb`,
later `solutions/...`). Change it here, then run `make build`: every "Open in Colab" badge follows.
"""
COLAB_BRANCH = "main"
COLAB_PLACEHOLDER = "COLAB_URL"
"""What the source notebook's badge links to; the build replaces it with the generated file's Colab URL."""

EXPORT_TAG = "export"
"""Code cells with this cell tag form the plain Python modules (imports, ModelArgs, the graded definitions)."""

SELFCHECK_CELL = "selfcheck"
"""The provided code cell that holds the public self-check module inside the notebook."""
SELFCHECK_MODULE = f"source/{ASSIGNMENT}/selfcheck.py"
SELFCHECK_FILES = ("selfcheck.py", "conftest.py", "test_attention.py")
"""The pytest self-check in source/<assignment>/, copied beside the released notebook and the exercise module."""
