"""`nbgrader zip_collect` plugin: map Colab downloads `<student_id>_<any name>.ipynb` to the assignment's notebook.

Colab names a student's file after whatever they did with it: `attention.ipynb`,
`Copy of attention.ipynb`, `attention (1).ipynb`, `Copy of attention (2).ipynb`, and in Chinese
`attention.ipynb 的副本` (which may come without a final `.ipynb`). The student id is everything
before the first `_` (letters, digits, `-` and `.`, starting with a letter or digit); the rest
only has to be a notebook. Every file lands in `submitted/<student_id>/<assignment>/<notebook>.ipynb`.

Nothing is dropped silently: a file that cannot be mapped (no student id, not a notebook, not
readable) is named in a warning and again in the summary logged before collection starts. When a
student has several files, the newest (grader.handin.newest: modification time, then Colab's copy number)
is collected and the others are named at INFO, as are the files an LMS adds beside the hand-ins (the LMS
collector says which): routine, counted in the summary, which is a WARNING only when something needs a person.
nbgrader's own lines about the files the collector already reported follow the collector's level, and its line
for each folder it creates is INFO.

`extracted/` stays as the archive (or the instructor) made it: a notebook without the `.ipynb` suffix (nbgrader
names the copy after the suffix) is collected from a copy with the suffix appended, and a notebook nested too deep
for nbgrader from a cut-down copy, both in the kit's own `extracted/.kit-copies/`.

A file larger than `max_notebook_bytes` (64 MiB: a Colab notebook with plots is a few MiB) is left
out before it is read, and so is a link (never followed) or any other non-regular file.

The plan is made once the extracted folder is complete: at start-up when there is no archive
folder to extract (nbgrader then collects `extracted/` as the instructor filled it), otherwise when
the kit's `SafeExtractor` has extracted the archives (it calls `plan_collection`). With another
extractor, the plan is made at the first file nbgrader asks about.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from nbgrader.apps.zipcollectapp import ZipCollectApp
from nbgrader.plugins import FileNameCollectorPlugin
from nbgrader.utils import find_all_notebooks
from traitlets import Int

from grader.handin.newest import newest_key, notebook_stem
from grader.handin.student_id import STUDENT_ID

from . import earlier_collect
from .collect_log import NbgraderLinesAtTheCollectorsLevel
from .bounded_depth import MAX_DEPTH, bounded

KIT_COPIES = ".kit-copies"
"""Where in extracted/ the collector writes the copies it collects instead of a student's file (a notebook cut down to
a readable depth, one given the `.ipynb` suffix): the student's file itself is left as it is."""
_IGNORED_DIRS = {"__MACOSX", ".ipynb_checkpoints", KIT_COPIES}

MAX_NOTEBOOK_BYTES = 64 << 20
"""Largest notebook collected. Real Colab notebooks with plots are a few MiB, rarely tens; a bigger file
is padding or pasted data, and reading it costs the instructor's machine memory for nothing."""


def student_id_of(name: str) -> str | None:
    """The student id a file name starts with (`<student_id>_<name>`), or None when it starts with none."""
    match = STUDENT_ID.match(unicodedata.normalize("NFC", name))
    return match.group("student_id") if match else None


@dataclass(frozen=True)
class Identity:
    """Whose a file is, as its name (or its LMS) says. `rank` orders two files of one student, newest last,
    before the file time does (`basis` names it); `timestamp` (aware) goes into nbgrader's timestamp.txt."""
    student_id: str
    file_name: str  # the file's own name as the student uploaded it, LMS decorations removed
    timestamp: datetime | None = None
    rank: tuple = ()
    basis: str = "file time, then Colab's copy number"
    late: bool = False  # the LMS's own late mark (Canvas's LATE)
    submitter: str = ""  # the LMS's own key for who handed it in (Canvas user id, Moodle participant, username)


@dataclass
class Candidate:
    path: Path
    student_id: str
    notebook: str  # the released notebook it maps to, e.g. attention.ipynb
    identity: Identity | None = None
    handed_in: Path | None = None  # the student's own file, when `path` is the kit's copy of it (KIT_COPIES)

    @property
    def student_file(self) -> Path:
        return self.handed_in or self.path

    def newest_key(self) -> tuple:
        return newest_key(self.path, self.identity.rank if self.identity else (),
                          self.identity.file_name if self.identity else None)


def is_notebook_file(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "nbformat" in data and ("cells" in data or "worksheets" in data)


def depth_bounded_copy(path: Path, extracted: Path) -> Path | None:
    """A copy of the notebook cut to a depth nbgrader can read (in extracted/KIT_COPIES, the file left as it is),
    or None when it needs none."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    cut = bounded(text)
    if cut is None:
        return None
    copy = extracted / KIT_COPIES / path.relative_to(extracted)
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(cut, encoding="utf-8")
    os.utime(copy, (path.stat().st_atime, path.stat().st_mtime))  # as new as the student's file, no newer
    return copy


def suffixed_copy(path: Path, extracted: Path) -> Path:
    """`path` given the `.ipynb` suffix nbgrader needs: itself when it is the kit's own copy already, else a copy in
    extracted/KIT_COPIES with the file's time (the student's file left as it is)."""
    if KIT_COPIES in path.relative_to(extracted).parts:
        renamed = path.with_name(path.name + ".ipynb")
        path.rename(renamed)
        return renamed
    copy = extracted / KIT_COPIES / path.relative_to(extracted).with_name(path.name + ".ipynb")
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, copy, follow_symlinks=False)
    return copy


def collect_folder(app: ZipCollectApp, step: str) -> Path:
    """One of zip_collect's folders (`step`: its archive or extracted directory), from its public settings,
    as ZipCollectApp's private `_format_collect_path` builds it."""
    return Path(os.path.join(app.coursedir.root, app.collect_directory_structure).format(
        downloaded=app.downloaded_directory, assignment_id=app.coursedir.assignment_id, collect_step=step))


class ColabFileNameCollector(FileNameCollectorPlugin):
    """Collect `<student_id>_<any name>` notebooks whatever Colab called the copy; report every file left out."""

    max_notebook_bytes = Int(MAX_NOTEBOOK_BYTES, help="Largest notebook file collected.").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.plan: dict[str, Candidate] = {}  # file path -> what it is collected as
        self.left_out: dict[str, str] = {}  # file path -> why it is not collected
        self.conflicts: dict[str, str] = {}  # student id -> the hand-ins of several people it was given
        self.routine: set[str] = set()  # the left-out paths that need no one's look (older uploads, LMS receipts)
        self.copied: dict[str, Path] = {}  # a student's file -> the kit's copy collected instead
        self.unplanned = 0  # files nbgrader asked about that the plan never saw
        self.planned = False
        self.extracted_root: Path | None = None
        app = self.parent
        if self.is_zip_collect(app):
            for old in [f for f in self.log.filters if isinstance(f, NbgraderLinesAtTheCollectorsLevel)]:
                self.log.removeFilter(old)
            self.log.addFilter(NbgraderLinesAtTheCollectorsLevel(self))
        if self.is_zip_collect(app) and not collect_folder(app, app.archive_directory).is_dir():
            self.plan_collection(collect_folder(app, app.extracted_directory))

    @staticmethod
    def is_zip_collect(app) -> bool:
        return isinstance(app, ZipCollectApp)

    def plan_collection(self, extracted: Path) -> None:
        """Plan over the extracted folder as it is now complete (called again after extraction)."""
        self.plan.clear()
        self.left_out.clear()
        self.conflicts.clear()
        self.routine.clear()
        self.copied.clear()
        self.make_plan(extracted, self.released_notebooks(self.parent) if self.is_zip_collect(self.parent) else None)
        if self.is_zip_collect(self.parent):
            earlier_collect.reconcile(self.parent, {c.student_id: {
                "layout": self.layout_name(), "file": os.path.relpath(c.student_file, extracted),
                **({"conflict": self.conflicts[c.student_id]} if c.student_id in self.conflicts else {})}
                for c in self.plan.values()}, self.log)

    def layout_name(self) -> str:
        """The naming the collected files follow (the LMS collector says which LMS's)."""
        return "student_id"

    def is_routine(self, path: Path) -> bool:
        """Whether a file left out is one the LMS adds beside the hand-ins (the LMS collector knows which)."""
        return False

    @property
    def reported(self) -> set[str]:
        """The files the collector has said why it does not collect (left out, or collected from its copy)."""
        return {*self.left_out, *self.copied}

    @staticmethod
    def released_notebooks(app) -> list[str]:
        """The assignment's notebooks (top level of its release folder: released solutions are not one)."""
        coursedir = app.coursedir
        folder = coursedir.format_path(coursedir.release_directory, ".", coursedir.assignment_id)
        return sorted(name for name in find_all_notebooks(folder) if os.sep not in name and "/" not in name)

    def make_plan(self, extracted: Path, released: list[str] | None) -> None:
        """Decide, before nbgrader lists the files, which file each student's submission is and which are left out."""
        self.planned = True
        self.extracted_root = extracted
        if not extracted.is_dir():
            return
        by_student: dict[tuple[str, str], list[Candidate]] = {}
        for root, dirs, files in os.walk(extracted):
            for linked in [d for d in dirs if (Path(root) / d).is_symlink()]:
                self.left_out[str(Path(root) / linked)] = "a link to a folder: links are never followed"
            dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS and not (Path(root) / d).is_symlink())
            for file in sorted(files):
                path = Path(root) / file
                candidate, reason = self.map_file(path, released)
                if candidate is None:
                    self.left_out[str(path)] = reason
                    if self.is_routine(path):
                        self.routine.add(str(path))
                    continue
                if candidate.handed_in is not None:
                    self.copied[str(path)] = candidate.path
                by_student.setdefault((candidate.student_id, candidate.notebook), []).append(candidate)
        for (student, notebook), files in by_student.items():
            files.sort(key=Candidate.newest_key)
            chosen = files[-1]
            self.plan[str(chosen.path)] = chosen
            basis = chosen.identity.basis if chosen.identity else Identity(student, "").basis
            for older in files[:-1]:
                self.left_out[str(older.path)] = (f"student {student} has a newer file for {notebook} (by {basis}): "
                                                  f"{chosen.student_file.name!r} is collected instead")
                self.routine.add(str(older.path))
            submitters = sorted({c.identity.submitter for c in files if c.identity and c.identity.submitter})
            if len(submitters) > 1:
                self.conflicts[student] = (f"hand-ins of {len(submitters)} different people ({', '.join(submitters)}) "
                                           f"map to student {student}: all are kept in extracted/, "
                                           f"{os.path.relpath(chosen.student_file, extracted)!r} (newest by {basis}) is "
                                           f"collected; check the roster")
        for path, reason in sorted(self.left_out.items()):
            (self.log.info if path in self.routine else self.log.warning)(
                "Not collected: %r (%s)", os.path.relpath(path, extracted), reason)
        for student, conflict in sorted(self.conflicts.items()):
            self.log.warning("Conflict: %s", conflict)
        students = sorted({c.student_id for c in self.plan.values()})
        needs_a_look = {path: why for path, why in sorted(self.left_out.items()) if path not in self.routine}
        (self.log.warning if needs_a_look or self.conflicts else self.log.info)(  # only what needs a person warns
            "Colab collector: %d notebook(s) for %d student(s) will be collected; %d file(s) left out%s%s%s",
            len(self.plan), len(students), len(needs_a_look),
            (": " + "; ".join(f"{os.path.relpath(p, extracted)} ({r})" for p, r in needs_a_look.items()))
            if needs_a_look else "",
            f"; {len(self.routine)} routine file(s) not collected (older uploads, the LMS's receipts and online "
            f"text: each at INFO above)" if self.routine else "",
            f"; {len(self.conflicts)} conflict(s): " + "; ".join(self.conflicts.values()) if self.conflicts else "",
        )

    def map_file(self, path: Path, released: list[str] | None) -> tuple[Candidate | None, str]:
        """What a file is collected as, or why it cannot be; `released` None accepts any notebook name."""
        name, handed_in = unicodedata.normalize("NFC", path.name), path
        if name.startswith(".") or any(part in _IGNORED_DIRS for part in path.parts):
            return None, "a hidden or system file"
        # `kv_cache.ipynb` as Colab names it, not student `kv`'s `cache.ipynb`
        if self.layout_name() == "student_id" and released and f"{notebook_stem(name)[0]}.ipynb" in released:
            return None, "no student id: the name is the assignment's own; it must be <student_id>_<name>.ipynb"
        identity = self.identify(path)
        if isinstance(identity, str):
            return None, identity
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return None, "a link, not a file: links are never followed"
        if not stat.S_ISREG(info.st_mode):
            return None, "not a regular file"
        if info.st_size > self.max_notebook_bytes:
            return None, (f"{info.st_size / (1 << 20):.1f} MiB, over the {self.max_notebook_bytes / (1 << 20):.0f} MiB "
                          f"limit for one notebook: not read; a Colab notebook with plots is a few MiB "
                          f"(ask the student to clear large outputs and download it again)")
        inside = self.extracted_root is not None and path.is_relative_to(self.extracted_root)
        if inside:
            copy = depth_bounded_copy(path, self.extracted_root)
            if copy is not None:
                self.log.warning("Cut down: %r nests deeper than %d levels, more than nbgrader can read; graded from %s, "
                                 "where each part deeper than that is replaced by a note (its code cells are kept)",
                                 name, MAX_DEPTH, copy)
                path = copy
        if not is_notebook_file(path):
            return None, "not a notebook (no readable nbformat JSON)"
        stem = notebook_stem(identity.file_name)[0]
        if released is None or f"{stem}.ipynb" in released:
            notebook = f"{stem}.ipynb"
        elif len(released) == 1:
            notebook = released[0]
            if stem != Path(released[0]).stem:
                self.log.info("%r: taken as %s, the assignment's only notebook", name, notebook)
        else:
            return None, f"cannot tell which of the released notebooks {released} it is"
        if not path.name.lower().endswith(".ipynb"):
            if not inside:
                return None, "a notebook without the .ipynb suffix outside the folder being collected"
            path = suffixed_copy(path, self.extracted_root)
            self.log.info("%r: collected from a copy named to end in .ipynb (%s), the file left as it is",
                          name, os.path.relpath(path, self.extracted_root))
        return Candidate(path, identity.student_id, notebook, identity,
                         handed_in if path != handed_in else None), ""

    def identify(self, path: Path) -> Identity | str:
        """Whose the file is, from `<student_id>_<name>`, or why it is no one's."""
        match = STUDENT_ID.match(unicodedata.normalize("NFC", path.name))
        if not match:
            return "no student id: the name must be <student_id>_<name>.ipynb, id of letters, digits, - and ."
        return Identity(match.group("student_id"), match.group("name"))

    def collect(self, submitted_file: str) -> dict | None:
        if not self.planned:  # another extractor, or outside zip_collect: plan now, over what is there
            app = self.parent
            self.plan_collection(collect_folder(app, app.extracted_directory) if self.is_zip_collect(app)
                                 else Path(submitted_file).parent)
        candidate = self.plan.get(submitted_file)
        if candidate is None:
            if submitted_file in self.copied:
                self.log.info("Skipping %r: collected from the kit's copy %s", os.path.basename(submitted_file),
                              self.copied[submitted_file])
            elif submitted_file in self.left_out:  # said once already, at its level
                self.log.info("Skipping %r: %s", os.path.basename(submitted_file), self.left_out[submitted_file])
            else:
                self.unplanned += 1
                self.log.warning("Skipping %r: not seen when the collection was planned", os.path.basename(submitted_file))
            return None
        found = {"student_id": candidate.student_id, "file_id": candidate.notebook}
        if candidate.identity and candidate.identity.timestamp:  # nbgrader writes it into timestamp.txt
            found["timestamp"] = candidate.identity.timestamp.isoformat()
        return found
