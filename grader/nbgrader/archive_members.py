"""Read a hand-in archive's members (zip or tar, compressed or not) with every size bounded before it is trusted.

Everything here comes from a student: entry names, kinds, declared sizes and the compressed
bytes themselves. A reader yields `Member`s, each with the size its header declares; it does not
decide what to write (that is `safe_extractor`). What it bounds itself, because only it can:

- zip: the entry count and directory size (read from the end records, before zipfile builds one
  object per entry) and the sum of declared sizes, both before anything is yielded;
- tar: every decompressed byte, counted while streaming (a refused member's data is still
  decompressed to skip it), against the archive's total and its compression ratio, and the tar
  header extensions (pax, GNU long names) that tarfile would read whole into memory.
A limit crossed by the archive as a whole raises `ArchiveRefused`.
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import stat
import struct
import tarfile
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

RATIO_FLOOR_BYTES = 1 << 20
"""Below this many uncompressed bytes the compression ratio is not judged: small text compresses well."""
MAX_ZIP_RECORD_BYTES = 1 << 10
"""Room for one zip directory record: 46 bytes and a name, extra field and comment of honest length."""
MAX_TAR_HEADER_BYTES = 64 << 10
"""A pax header or GNU long name holds a path and a few fields; tarfile reads it whole into memory."""


class ArchiveRefused(Exception):
    """The whole archive is left out; the message says why, in words for the instructor."""


@dataclass(frozen=True)
class ArchiveLimits:
    max_entry_bytes: int  # one uncompressed file
    max_total_bytes: int  # everything one archive expands to
    max_ratio: float  # uncompressed / compressed, judged above RATIO_FLOOR_BYTES
    max_entries: int


@dataclass(frozen=True)
class Member:
    name: str  # as the archive spells it: never trusted as a path
    kind: str  # "file", "dir", "symlink", "hardlink" or "special"
    size: int  # uncompressed size its header declares
    packed: int | None  # compressed size when the format records one per entry (zip)
    mtime: float | None
    open: Callable[[], BinaryIO]


def mib(size: float) -> str:
    return f"{size / (1 << 20):.1f} MiB"


def members(path: Path, limits: ArchiveLimits) -> Iterator[Member]:
    """The archive's members, zip or tar (plain, gzip, bzip2 or xz), told apart by content, not by name."""
    if zipfile.is_zipfile(path):
        yield from zip_members(path, limits)
    else:
        yield from tar_members(path, limits)


def zip_file_names(path: Path, limits: ArchiveLimits) -> list[str] | None:
    """The names of a zip's file members, read from its directory alone (no member's data), within the same bounds as
    `members`; None for a tar, whose names cost decompressing it all (no LMS gives its class download as a tar)."""
    if not zipfile.is_zipfile(path):
        return None
    return [member.name for member in zip_members(path, limits) if member.kind == "file"]


def zip_directory(path: Path) -> tuple[int, int]:
    """(entry count, central directory bytes) as the end records declare them (zip64 included), read without
    zipfile: zipfile builds one object per entry, reading as many bytes as the directory size says."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - (1 << 16) - 22))
        tail = handle.read()
    end = tail.rfind(b"PK\x05\x06")
    if end < 0 or len(tail) < end + 22:
        raise ArchiveRefused("not a readable zip archive (no end-of-central-directory record)")
    count, directory = struct.unpack("<HI", tail[end + 10:end + 16])
    zip64 = tail.rfind(b"PK\x06\x06", 0, end)
    if zip64 >= 0 and len(tail) >= zip64 + 48:
        count, directory = struct.unpack("<QQ", tail[zip64 + 32:zip64 + 48])
    return count, directory


def zip_kind(info: zipfile.ZipInfo) -> str:
    """What an entry is: only a Unix-made zip records a file type (many record permissions alone)."""
    file_type = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0
    if info.is_dir() or file_type == stat.S_IFDIR:
        return "dir"
    if file_type == stat.S_IFLNK:
        return "symlink"
    if file_type not in (0, stat.S_IFREG):
        return "special"
    return "file"


def zip_members(path: Path, limits: ArchiveLimits) -> Iterator[Member]:
    count, directory = zip_directory(path)
    if count > limits.max_entries or directory > limits.max_entries * MAX_ZIP_RECORD_BYTES:
        raise ArchiveRefused(f"{count} entries in a {mib(directory)} directory, over the limit of "
                             f"{limits.max_entries} entries")
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > limits.max_entries:  # the end record's count can lie; the directory bounded the memory
            raise ArchiveRefused(f"{len(infos)} entries, over the limit of {limits.max_entries} entries")
        declared = sum(info.file_size for info in infos if zip_kind(info) == "file")
        if declared > limits.max_total_bytes:
            raise ArchiveRefused(f"its entries declare {mib(declared)} uncompressed, over the "
                                 f"{mib(limits.max_total_bytes)} limit for one archive")
        for info in infos:
            yield Member(info.filename, zip_kind(info), info.file_size, info.compress_size,
                         _zip_mtime(info), lambda info=info: archive.open(info))


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    try:
        return datetime(*info.date_time).timestamp()
    except ValueError:
        return None


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header that refuses, before tarfile reads them, header extensions too large to be honest."""

    def _proc_member(self, tar):
        if self.type in (*tarfile.GNU_TYPES, tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
            if self.type == tarfile.GNUTYPE_SPARSE:
                raise ArchiveRefused("a sparse tar member: not something a notebook hand-in holds")
            if self.size > MAX_TAR_HEADER_BYTES:
                raise ArchiveRefused(f"a tar header extension of {mib(self.size)}: an honest one holds a path")
        return super()._proc_member(tar)


class _CountingReader:
    """A decompressed stream that refuses to yield more than the archive's total or ratio allows."""

    def __init__(self, stream: BinaryIO, archive_bytes: int, limits: ArchiveLimits):
        self.stream, self.archive_bytes, self.limits, self.count = stream, archive_bytes, limits, 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size if size is not None and size >= 0 else 1 << 20)
        self.count += len(data)
        if self.count > self.limits.max_total_bytes:
            raise ArchiveRefused(f"expands to more than {mib(self.limits.max_total_bytes)}, "
                                 f"the limit for one archive")
        if self.count > RATIO_FLOOR_BYTES and self.count > self.limits.max_ratio * max(self.archive_bytes, 1):
            raise ArchiveRefused(f"compressed more than {self.limits.max_ratio:.0f}:1 ({mib(self.archive_bytes)} "
                                 f"expanding past {mib(self.count)}): a compression bomb")
        return data


def _decompressed(handle: BinaryIO) -> BinaryIO:
    magic = handle.read(6)
    handle.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=handle)
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(handle)
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(handle)
    return handle


def tar_kind(info: tarfile.TarInfo) -> str:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym():
        return "symlink"
    if info.islnk():
        return "hardlink"
    return "special"


def tar_members(path: Path, limits: ArchiveLimits) -> Iterator[Member]:
    """Members of a tar read as a stream: each member's data must be read before the next is asked for."""
    with path.open("rb") as handle:
        reader = _CountingReader(_decompressed(handle), path.stat().st_size, limits)
        try:
            archive = tarfile.open(fileobj=reader, mode="r|", tarinfo=_BoundedTarInfo)
        except tarfile.ReadError as error:
            raise ArchiveRefused(f"neither a zip nor a tar archive ({error})") from None
        with archive:
            for number, info in enumerate(archive, start=1):
                if number > limits.max_entries:
                    raise ArchiveRefused(f"more than {limits.max_entries} entries")
                yield Member(info.name, tar_kind(info), info.size, None, float(info.mtime),
                             lambda info=info: archive.extractfile(info))
