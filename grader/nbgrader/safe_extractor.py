"""`nbgrader zip_collect` plugin: extract hand-in archives into `extracted/` without trusting them.

Replaces nbgrader's `ExtractorPlugin`, which unpacks with shutil (an absolute or `..` entry aborts
the whole run; nothing bounds sizes; links in tarballs vanish silently). For every file in
`downloaded/<assignment>/archive/`:

- An archive (`.zip`, `.gz` by default; zip or tar told apart by content) is read member by member.
  Only regular files are written, each into the archive's own folder, opened with `O_EXCL` and
  `O_NOFOLLOW`: no link is ever created or followed. A member is refused, and named with its
  reason, when it is a link, a device or other special file, has an absolute path, climbs out with
  `..`, is itself an archive (not opened: one level only), declares more than `max_entry_bytes`, is
  compressed more than `max_ratio`:1, or turns out larger than its header said while it is copied.
  An archive larger than `max_archive_bytes`, expanding past `max_total_bytes`, or with more than
  `max_entries` entries is refused as a whole, and nothing from it is
  kept. A class archive (an LMS's download) is bounded by `max_class_entries` and `max_class_bytes` instead, and each
  student in it (the LMS-written part of each name) gets at most `max_files_per_student` files and
  `max_bytes_per_student` bytes; their further files are left out in one line, never the class.
- An archive named `<student_id>_<anything>` (the id as the collector reads it) is that student's:
  it delivers only their notebook. A member whose own name starts with another student's id is
  refused; a member without an id prefix is written as `<student_id>_<name>`, so a student's
  `alice_hw.zip` holding `attention.ipynb` is collected as Alice's. An archive without an id prefix
  (for example `class.zip`, or `attention_all.zip` named after the assignment) is a class archive
  the instructor made: its members are collected under whatever student id their own names carry.
  An LMS's bulk download is a class archive too, whatever its name starts with: when the collector
  (grader.nbgrader.lms_collector) says so (Blackboard's `gradebook_…`, or any archive once the LMS is named), and when
  a zip is Moodle's by its own structure (grader.lms.names.class_download): `LLM_2026-Attention-88.zip`, whose every
  member is under a `<name>_<id>_assignsubmission_…` Moodle wrote, is the class's, not `LLM`'s.
  Archive names are trusted as far as plain file names are: they are what the instructor or the LMS
  called the downloads.
- Any other file is copied as it is, unless it is a link or larger than `max_entry_bytes`.

Every refusal is logged as one `Not extracted:` warning, and all of them again in a summary. When
extraction is done, the kit's collector is told to plan the collection over what is now there.
"""
from __future__ import annotations

import lzma
import math
import os
import re
import shutil
import stat
import tarfile
import time
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from traitlets import Float, Int

from nbgrader.plugins import ExtractorPlugin

from grader.lms.names import class_download, submitter_key

from .archive_members import ArchiveLimits, ArchiveRefused, Member, RATIO_FLOOR_BYTES, members, mib, zip_file_names
from .collector import MAX_NOTEBOOK_BYTES, ColabFileNameCollector, notebook_stem, student_id_of

_CHUNK = 1 << 20
MAX_ZONE_AHEAD_S = 14 * 3600
"""How far ahead of UTC a zone's clock runs (UTC+14): a zip's times are the wall clock of whoever made it."""
_UNREADABLE = (zipfile.BadZipFile, tarfile.TarError, zlib.error, lzma.LZMAError, EOFError, OSError,
               RuntimeError, NotImplementedError, ValueError)
"""What a damaged, encrypted or unsupported member raises while it is read (bz2 raises OSError)."""
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KIND_REASON = {
    "symlink": "a symbolic link: links are never created or followed",
    "hardlink": "a hard link: links are never created or followed",
    "special": "a device, pipe or other special file",
}


class EntryTooLarge(Exception):
    """A member held more bytes than allowed while it was copied."""


def safe_parts(name: str) -> tuple[list[str], str]:
    """The folder/file parts an entry name may be written under, or why it may not be written at all."""
    if _CONTROL.search(name):
        return [], "a name with control characters"
    name = name.replace("\\", "/")
    if name.startswith("/") or _DRIVE.match(name):
        return [], "an absolute path: entries are written only inside the archive's folder"
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return [], "a path that climbs out of the archive with '..'"
    return parts, ""


def copy_bounded(source: BinaryIO, target: Path, limit: int) -> int:
    """Copy at most `limit` bytes into a new file that must not exist (no link followed); raise beyond it."""
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    written = 0
    try:
        with os.fdopen(descriptor, "wb") as out:
            while chunk := source.read(min(_CHUNK, limit + 1 - written)):
                written += len(chunk)
                if written > limit:
                    raise EntryTooLarge(f"holds more than the {mib(limit)} its header or size said")
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return written


class SafeExtractor(ExtractorPlugin):
    """Extract archives with sizes, ratios, paths, links and student ownership checked; name every refusal."""

    max_entry_bytes = Int(MAX_NOTEBOOK_BYTES, help="Largest uncompressed file written from an archive or copied.").tag(config=True)
    max_archive_bytes = Int(256 << 20, help="Largest archive file opened.").tag(config=True)
    max_total_bytes = Int(512 << 20, help="Most bytes one archive may expand to.").tag(config=True)
    max_ratio = Float(200.0, help="Largest compression ratio accepted for a member (or a tar stream) "
                                  "above 1 MiB; honest notebooks compress under 20:1.").tag(config=True)
    max_entries = Int(10_000, help="Most entries a student's own archive may hold.").tag(config=True)
    max_class_entries = Int(100_000, help="Most entries a class archive (an LMS's download) may hold: a bound on "
                                          "the memory its directory takes.").tag(config=True)
    max_class_bytes = Int(4 << 30, help="Most bytes a class archive (an LMS's download) may expand to; each student "
                                        "is held to max_bytes_per_student of it.").tag(config=True)
    max_files_per_student = Int(100, help="Most files written for one student from a class archive; their "
                                          "further files are left out, the class is extracted.").tag(config=True)
    max_bytes_per_student = Int(2 * MAX_NOTEBOOK_BYTES, help="Most bytes written for one student from a class "
                                                             "archive; their further files are left out.").tag(config=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.refused: list[tuple[str, str]] = []  # (what, why)
        self.written = 0
        self.files_of: dict[str, int] = {}  # a class archive's student (grader.lms.names.submitter_key) -> files seen
        self.bytes_of: dict[str, int] = {}  # … -> bytes written
        self.over_size: dict[str, int] = {}  # … -> files left out for their size

    def limits(self, owner: str | None) -> ArchiveLimits:
        """A student's own archive holds one notebook and a few files; a class archive, everyone's."""
        return ArchiveLimits(self.max_entry_bytes, self.max_total_bytes if owner else self.max_class_bytes,
                             self.max_ratio, self.max_entries if owner else self.max_class_entries)

    def refuse(self, what: str, why: str) -> None:
        self.refused.append((what, why))
        self.log.warning("Not extracted: %s (%s)", what, why)

    def extract(self, archive_path: str, extracted_path: str) -> None:
        source, target = Path(archive_path), Path(extracted_path)
        for root, dirs, files in os.walk(source):
            for linked in [name for name in dirs if (Path(root) / name).is_symlink()]:
                dirs.remove(linked)  # os.walk would not descend into it either, but silently
                self.refuse(repr(str((Path(root) / linked).relative_to(source))), _KIND_REASON["symlink"])
            dirs.sort()
            folder = target / Path(root).relative_to(source)
            folder.mkdir(parents=True, exist_ok=True)
            for name in sorted(files):
                path = Path(root) / name
                label = repr(str(path.relative_to(source)))
                mode = path.lstat().st_mode
                if not stat.S_ISREG(mode):
                    self.refuse(label, _KIND_REASON["symlink" if stat.S_ISLNK(mode) else "special"])
                elif Path(name).suffix in self.zip_ext:
                    self.extract_archive(path, folder, label)
                else:
                    self.copy_plain(path, folder / name, label)
        (self.log.warning if self.refused else self.log.info)(  # only what was left out is worth a warning
            "Safe extractor: %d file(s) written to %s; %d left out%s", self.written, target, len(self.refused),
            (": " + "; ".join(f"{what} ({why})" for what, why in self.refused)) if self.refused else "")
        collector = getattr(self.parent, "collector_plugin_inst", None)
        if isinstance(collector, ColabFileNameCollector):
            collector.plan_collection(target)

    def copy_plain(self, path: Path, target: Path, label: str) -> None:
        size = path.lstat().st_size
        if size > self.max_entry_bytes:
            self.refuse(label, f"{mib(size)}, over the {mib(self.max_entry_bytes)} limit for one notebook")
            return
        try:
            with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as source:
                copy_bounded(source, target, self.max_entry_bytes)
        except (EntryTooLarge, OSError) as error:  # it grew, or turned into a link, since it was looked at
            self.refuse(label, f"not copied ({error})")
            return
        shutil.copystat(path, target)
        self.written += 1

    def extract_archive(self, path: Path, folder: Path, label: str) -> None:
        size = path.stat().st_size
        if size > self.max_archive_bytes:
            self.refuse(label, f"an archive of {mib(size)}, over the {mib(self.max_archive_bytes)} limit")
            return
        stem = path.name[: -len(".tar.gz")] if path.name.endswith(".tar.gz") else path.stem
        if stem in ("", ".", ".."):
            self.refuse(label, "an archive name that cannot be a folder")
            return
        owner = self.student_named(stem)  # none for `attention_all.zip`, named after the assignment
        if self.is_class_export(stem):  # an LMS's download
            owner = None
        elif owner is not None and (layout := self.class_download_by_members(path, stem)):
            self.log.info("%s: every file in it is named as a %s class download names its files, so it is the class's "
                          "download, not student %r's own archive", label, layout, owner)
            owner = None
        destination = folder / stem
        written = self.written
        self.files_of, self.bytes_of, self.over_size = {}, {}, {}
        try:
            destination.mkdir(exist_ok=False)
            for member in members(path, self.limits(owner)):
                self.extract_member(member, destination, owner, f"{label} entry {member.name!r}")
            self.report_over_limit(label)
        except ArchiveRefused as refusal:
            shutil.rmtree(destination, ignore_errors=True)
            self.written = written
            self.refuse(label, f"refused as a whole, nothing from it is collected: {refusal}")
        except FileExistsError:
            self.refuse(label, f"a folder named {stem!r} is already in extracted/")
        except _UNREADABLE as error:
            self.refuse(label, f"unreadable from here on ({type(error).__name__}: {error}); "
                               f"entries before it are kept")

    def class_download_by_members(self, path: Path, stem: str) -> str:
        """The LMS whose class download the archive's own members say it is, or "" (grader.lms.names.class_download)."""
        try:
            names = zip_file_names(path, self.limits(None))
        except (ArchiveRefused, *_UNREADABLE):
            return ""  # extraction refuses it with its reason
        return class_download(stem, [PurePosixPath(*safe_parts(name)[0]) for name in names if safe_parts(name)[0]]) \
            if names else ""

    def over_student_limit(self, parts: list[str], size: int) -> bool:
        """Whether a class archive's member is past its student's share of files or bytes (counted here, refused in
        one line per student by report_over_limit)."""
        student = submitter_key(PurePosixPath(*parts)) or "(no student named)"
        self.files_of[student] = self.files_of.get(student, 0) + 1
        if self.files_of[student] > self.max_files_per_student:
            return True
        if self.bytes_of.get(student, 0) + size > self.max_bytes_per_student:
            self.over_size[student] = self.over_size.get(student, 0) + 1
            return True
        self.bytes_of[student] = self.bytes_of.get(student, 0) + size
        return False

    def report_over_limit(self, label: str) -> None:
        for student, count in sorted(self.files_of.items()):
            if count > self.max_files_per_student:
                self.refuse(f"{label}: {count - self.max_files_per_student} file(s) of {student}",
                            f"{count} files for one student, over the limit of {self.max_files_per_student}: the "
                            f"first {self.max_files_per_student} are extracted, the rest of the class as usual")
        for student, count in sorted(self.over_size.items()):
            self.refuse(f"{label}: {count} file(s) of {student}",
                        f"past the {mib(self.max_bytes_per_student)} one student's files may take; the files before "
                        f"them are extracted, the rest of the class as usual")

    def is_class_export(self, stem: str) -> bool:
        """An LMS's bulk download (Blackboard's `gradebook_…`, or any archive when the collector is told the LMS),
        as the kit's LmsCollector judges it: the whole class's archive, whatever its name starts with."""
        collector = getattr(self.parent, "collector_plugin_inst", None)
        judge = getattr(collector, "archive_is_class_export", None)
        return bool(judge and judge(stem))

    def student_named(self, name: str) -> str | None:
        """The student id an archive's or a member's name starts with (the collector's rule); none where the name
        starts with the assignment's whole name (`kv_cache.ipynb`, `kv_cache (1).ipynb`, `kv_cache_all.zip`), whose
        `kv` is no student."""
        assignment = self.parent_assignment
        if assignment is not None and (notebook_stem(name)[0] == assignment or name.startswith(f"{assignment}_")):
            return None
        return student_id_of(name)

    @property
    def parent_assignment(self) -> str | None:
        coursedir = getattr(self.parent, "coursedir", None)
        return getattr(coursedir, "assignment_id", None) or None

    def member_refusal(self, member: Member, parts: list[str], owner: str | None) -> str:
        """Why a member may not be written, from what its header says; empty when it may be."""
        if member.kind in _KIND_REASON:
            return _KIND_REASON[member.kind]
        if Path(parts[-1]).suffix in self.zip_ext:
            return "an archive inside an archive is not opened: extract it and put its notebook in archive/"
        if owner is not None and (named := self.student_named(parts[-1])) not in (None, owner):
            return (f"names student {named!r}, but this is {owner!r}'s archive: "
                    f"an archive delivers only its own student's notebook")
        if member.size > self.max_entry_bytes:
            return f"{mib(member.size)} uncompressed, over the {mib(self.max_entry_bytes)} limit for one notebook"
        if member.packed is not None and member.size > RATIO_FLOOR_BYTES \
                and member.size > self.max_ratio * max(member.packed, 1):
            return (f"compressed {member.size / max(member.packed, 1):.0f}:1 ({mib(member.packed)} expanding to "
                    f"{mib(member.size)}), over the {self.max_ratio:.0f}:1 limit: a compression bomb")
        return ""

    def extract_member(self, member: Member, destination: Path, owner: str | None, label: str) -> None:
        if member.kind == "dir":
            return  # folders are made for the files in them
        parts, reason = safe_parts(member.name)
        if not parts and not reason:
            reason = "an entry without a file name"
        reason = reason or self.member_refusal(member, parts, owner)
        if reason:
            self.refuse(label, reason)
            return
        if owner is None and self.over_student_limit(parts, member.size):
            return
        if owner is not None and self.student_named(parts[-1]) is None:
            parts[-1] = f"{owner}_{parts[-1]}"
        target = destination.joinpath(*parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with member.open() as source:
                copy_bounded(source, target, min(member.size, self.max_entry_bytes))
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            self.refuse(label, "its path collides with another entry of the archive")
            return
        except EntryTooLarge as error:
            self.refuse(label, str(error))
            return
        except _UNREADABLE as error:
            self.refuse(label, f"damaged, encrypted or not readable ({type(error).__name__}: {error})")
            return
        if member.mtime is not None and math.isfinite(member.mtime):
            # a future date must not make a copy the newest; an LMS's wall-clock time may run ahead of this machine's
            stamp = min(max(member.mtime, 0.0), time.time() + MAX_ZONE_AHEAD_S)
            os.utime(target, (stamp, stamp))
        self.written += 1
