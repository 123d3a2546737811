"""Which of one student's files is their newest: the one rule the LMS collector and Gradescope's run share.

Colab and browsers name a student's copies after what they did (`attention.ipynb`, `Copy of attention.ipynb`,
`attention (1).ipynb`, `attention.ipynb 的副本`); `notebook_stem` reads the notebook's own name and the copy number
back. Of several files the newest is, in order: the LMS's own order where it has one (Blackboard's attempt time,
Canvas's attachment id: `rank`), then the file's modification time, then the copy number, then the name.
"""
from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

_COPY_PREFIX = re.compile(r"^(?:copy of\s+)+", re.IGNORECASE)
_COPY_NUMBER = re.compile(r"\s*\((\d+)\)\s*$")
_COPY_SUFFIX = re.compile(r"\s*(?:的副本|副本|- copy|copy)\s*$", re.IGNORECASE)


def notebook_stem(name: str) -> tuple[str, int]:
    """`Copy of attention (2).ipynb` -> ("attention", 2); `attention.ipynb 的副本` -> ("attention", 0)."""
    name = unicodedata.normalize("NFC", name).strip()
    number = 0
    for _ in range(4):  # the decorations nest: "Copy of attention.ipynb 的副本 (1).ipynb"
        before = name
        if name.lower().endswith(".ipynb"):
            name = name[: -len(".ipynb")].strip()
        name = _COPY_PREFIX.sub("", name)
        found = _COPY_NUMBER.search(name)
        if found:
            number = max(number, int(found.group(1)))
            name = name[: found.start()]
        name = _COPY_SUFFIX.sub("", name).strip()
        if name == before:
            break
    return name, number


def newest_key(path: Path, rank: tuple = (), name: str | None = None) -> tuple:
    """What orders a student's files, newest last; `name`: the name as the student gave it (default the path's).
    The file's own time, never a link's target's."""
    name = path.name if name is None else name
    return (*rank, os.lstat(path).st_mtime, notebook_stem(name)[1], name)
