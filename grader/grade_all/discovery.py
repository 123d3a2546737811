"""Which file is whose: the submissions of a folder, one per student."""
from __future__ import annotations

import os
from pathlib import Path

from grader.exercises import NAMES
from grader.handin.newest import notebook_stem
from grader.handin.student_id import STUDENT_ID

SUFFIXES = (".ipynb", ".py")


def student_of_file(name: str) -> str:
    """A file directly in DIR is named like a Colab download for zip_collect, `<student_id>_<any name>`,
    and read by the collector's rule; a name without an id is the student's name (its stem), and so is a name that is
    an exercise's own (`kv_cache (1).ipynb` is no student `kv`'s)."""
    match = None if notebook_stem(name)[0] in NAMES else STUDENT_ID.match(name)
    return match.group("student_id") if match else Path(name).stem


def find_submissions(root: Path) -> list[tuple[str, Path]]:
    """One (student, file) per student: of two hand-ins claiming one id, the newest (see `one_per_student`)."""
    return one_per_student(all_submissions(root))[0]


def one_per_student(found: list[tuple[str, Path]]) -> tuple[list[tuple[str, Path]], dict[str, list[Path]]]:
    """(one submission per student, in first-seen order; student -> the other hand-ins claiming that id). The one
    graded is the newest by file time (then name), as a later upload replaces an earlier one; the others are kept
    as they are and listed, never graded under the same id silently."""
    by_student: dict[str, list[Path]] = {}
    for student, path in found:
        by_student.setdefault(student, []).append(path)
    chosen, conflicts = [], {}
    for student, paths in by_student.items():
        paths = sorted(paths, key=lambda path: (modified(path), str(path)))
        chosen.append((student, paths[-1]))
        if len(paths) > 1:
            conflicts[student] = paths[:-1]
    return chosen, conflicts


def modified(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def all_submissions(root: Path) -> list[tuple[str, Path]]:
    """(student, file) pairs: files directly in DIR are students of their own; in DIR/<student>/…
    the student's notebook is taken (else a .py), whatever it is called.

    No link is followed: a link is listed as it is (a file link, or a linked folder when the student has
    nothing else), so reading refuses it and the student's row says so; nothing it points at is read."""
    found = []
    for entry in sorted(root.iterdir()):
        if entry.is_symlink():
            if entry.suffix in SUFFIXES:
                found.append((student_of_file(entry.name), entry))
            elif entry.is_dir() and not entry.name.startswith("."):
                found.append((entry.name, entry))
        elif entry.is_dir():
            chosen = None if entry.name.startswith(".") else submission_in(entry)
            if chosen is not None:
                found.append((entry.name, chosen))
        elif entry.suffix in SUFFIXES:
            found.append((student_of_file(entry.name), entry))
    return found


def submission_in(folder: Path) -> Path | None:
    """A student's notebook (else a .py, else a linked folder), walking the folder without entering links."""
    files, linked_folders = [], []
    for parent, dirs, names in os.walk(folder):  # never descends into a linked folder
        parent = Path(parent)
        linked_folders += [parent / d for d in dirs if (parent / d).is_symlink() and not d.startswith(".")]
        dirs[:] = [d for d in dirs if d != ".ipynb_checkpoints"]
        files += [parent / name for name in names if Path(name).suffix in SUFFIXES]
    files.sort()
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    return (notebooks or files or sorted(linked_folders) or [None])[0]


def student_folder(root: Path, path: Path) -> Path:
    """The folder a submission belongs to: DIR/<student>, or DIR for a file directly in it."""
    parts = path.relative_to(root).parts
    return root / parts[0] if len(parts) > 1 else root
