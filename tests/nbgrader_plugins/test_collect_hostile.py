"""Does `nbgrader zip_collect` collect an honest class through hostile archives, naming every refused entry?

One real zip_collect run (the repo's nbgrader_config.py, a course root of its own, the first run
with archives) over honest students and hostile archives side by side: traversing and absolute
entry names, a notebook planted for another student, links in a tarball, compression bombs (one
declaring its size, one under the size cap but compressed 1000:1, one whose zip header lies, one
tar header extension too large to be honest, a zip directory far longer than its count says), a
nested archive, an oversized plain notebook, and a link and a linked folder in the archive folder itself.
"""
from __future__ import annotations

import base64
import gzip
import io
import os
import re
import struct
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.build.config import ASSIGNMENT, ROOT
from grader.process import nbgrader_env
from support.nbgrader_course import release_course, release_notebook

pytestmark = pytest.mark.e2e

MiB = 1 << 20
PADDING = b" " * MiB  # trailing spaces keep a notebook valid JSON and compress about 1000:1
OLD = 1_700_000_000.0


def notebook(owner: str) -> bytes:
    """The release notebook, marked with who really wrote it."""
    nb = release_notebook()
    nb.metadata["written_by"] = owner
    return nbformat.writes(nb).encode()


def notebook_with_plots(owner: str, mib: int) -> bytes:
    """An honest big notebook: `mib` MiB of PNG output (random bytes, incompressible like real images)."""
    nb = release_notebook()
    nb.metadata["written_by"] = owner
    png = base64.b64encode(os.urandom(mib * MiB * 3 // 4)).decode()
    cell = nbformat.v4.new_code_cell("plt.show()", outputs=[nbformat.v4.new_output("display_data", data={"image/png": png})])
    nb.cells.append(cell)
    return nbformat.writes(nb).encode()


def padded_notebook(handle, mib: int) -> None:
    handle.write(notebook("bomb"))
    for _ in range(mib):
        handle.write(PADDING)


def write_zip(path: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0)), data)


def write_tar_gz(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> None:
    with gzip.open(path, "wb") as packed, tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as archive:
        for info, data in members:
            archive.addfile(info, io.BytesIO(data) if data is not None else None)


def tar_entry(name: str, data: bytes | None = None, **fields) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data or b""), OLD + 100
    for key, value in fields.items():
        setattr(info, key, value)
    return info, data


def lie_about_size(path: Path, declared: int) -> None:
    """Rewrite a one-entry zip's local and central headers to declare `declared` uncompressed bytes."""
    data = bytearray(path.read_bytes())
    local, central = data.find(b"PK\x03\x04"), data.rfind(b"PK\x01\x02")
    data[local + 22:local + 26] = struct.pack("<I", declared)
    data[central + 24:central + 28] = struct.pack("<I", declared)
    path.write_bytes(bytes(data))


def declare_entry_count(path: Path, count: int) -> None:
    """Rewrite a zip's end-of-central-directory record to declare `count` entries (zipfile trusts the size instead)."""
    data = bytearray(path.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    data[end + 8:end + 12] = struct.pack("<HH", count, count)
    path.write_bytes(bytes(data))


def pax_bomb(path: Path, size: int) -> None:
    """A tar.gz whose first header is a pax extension of `size` incompressible bytes (tarfile reads it whole)."""
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, size
    with gzip.open(path, "wb", compresslevel=0) as packed:
        packed.write(header.tobuf(format=tarfile.USTAR_FORMAT))
        for _ in range(size // MiB):
            packed.write(os.urandom(MiB))


def build_downloads(archive: Path, outside: Path) -> dict[str, bytes]:
    """Fill archive/ with the class; return the honest students' notebooks as they wrote them."""
    honest = {student: notebook(student) for student in ("alice", "bob", "carol", "trudy", "mallory", "erin", "frank")}
    honest["ivan"] = notebook_with_plots("ivan", 24)  # big, but as a Colab notebook with many plots is
    honest["walt"] = notebook("walt")
    archive.mkdir(parents=True)
    write_zip(archive / "ivan_attention.zip", {"Copy of attention.ipynb": honest["ivan"]})
    write_zip(archive / "alice_attention.zip", {"attention.ipynb": honest["alice"]})
    (archive / "bob_attention.ipynb").write_bytes(honest["bob"])
    os.utime(archive / "bob_attention.ipynb", (OLD, OLD))  # older than anything Mallory plants
    write_zip(archive / "mallory_hw.zip", {"bob_attention (1).ipynb": notebook("mallory"),
                                           "mallory_attention.ipynb": honest["mallory"]})
    write_tar_gz(archive / "carol_hw.tar.gz", [
        tar_entry("carol_Copy of attention.ipynb", honest["carol"]),
        tar_entry("link_attention.ipynb", type=tarfile.SYMTYPE, linkname="/etc/passwd"),
        tar_entry("hard_attention.ipynb", type=tarfile.LNKTYPE, linkname="carol_Copy of attention.ipynb"),
        tar_entry("up", type=tarfile.SYMTYPE, linkname=str(outside)),
        tar_entry("up/carol_climbed.ipynb", notebook("carol-link"), mtime=OLD),  # into a folder, never the link
        tar_entry("fifo_attention.ipynb", type=tarfile.FIFOTYPE),
    ])
    traversal = {  # names without a student id, so that only the path check stands between them and the disk
        "../../../escaped.ipynb": notebook("trudy-up"),
        f"{outside}/absolute.ipynb": notebook("trudy-abs"),
        "sub/../../../../deeper.ipynb": notebook("trudy-deep"),
        "..\\..\\..\\windows.ipynb": notebook("trudy-win"),
    }
    write_tar_gz(archive / "walt_time.tar.gz", [  # a date no clock can hold must not stop the run
        tar_entry("attention.ipynb", honest["walt"], pax_headers={"mtime": "-1e20"})])
    write_zip(archive / "trudy_trav.zip", {**traversal, "trudy_attention.ipynb": honest["trudy"]})
    write_zip(archive / "class-trav.zip", traversal)  # a class archive: no owner prefix added either
    with zipfile.ZipFile(archive / "zed_bomb.zip", "w", zipfile.ZIP_DEFLATED) as bomb:
        with bomb.open("zed_attention.ipynb", "w", force_zip64=True) as entry:
            padded_notebook(entry, 200)  # declared 200 MiB, over the 64 MiB cap
        with bomb.open("ratio.ipynb", "w") as entry:
            padded_notebook(entry, 40)  # under the cap, compressed 1000:1
    with zipfile.ZipFile(archive / "liar_bomb.zip", "w", zipfile.ZIP_DEFLATED) as liar:
        with liar.open("liar_attention.ipynb", "w") as entry:
            padded_notebook(entry, 100)
    lie_about_size(archive / "liar_bomb.zip", 2048)
    with gzip.open(archive / "tara_bomb.tar.gz", "wb") as packed, tarfile.open(fileobj=packed, mode="w|") as tar:
        info, data = tar_entry("tara_attention.ipynb")
        info.size = len(notebook("bomb")) + 40 * MiB  # under the cap, but the stream expands 1000:1
        stream = io.BytesIO()
        padded_notebook(stream, 40)
        stream.seek(0)
        tar.addfile(info, stream)
    pax_bomb(archive / "pax_bomb.tar.gz", 160 * MiB)
    write_zip(archive / "victor_nest.zip", {"inner.zip": (archive / "alice_attention.zip").read_bytes()})
    with (archive / "oscar_attention.ipynb").open("wb") as big:
        big.write(notebook("oscar"))
        big.truncate(100 * MiB)  # sparse: 100 MiB to whoever reads it, nothing on this disk
    (archive / "peggy_attention.ipynb").symlink_to("/etc/passwd")
    (archive / "linked").symlink_to(outside)  # a folder link: never walked into
    write_zip(archive / "wide_bomb.zip", {f"e{number}": b"" for number in range(20_000)})
    declare_entry_count(archive / "wide_bomb.zip", 1)
    write_zip(archive / "class.zip", {"erin_attention.ipynb": honest["erin"],
                                      "frank_Copy of attention.ipynb": honest["frank"]})
    return honest


REFUSED = {
    "'mallory_hw.zip' entry 'bob_attention (1).ipynb'": "names student 'bob'",
    "'carol_hw.tar.gz' entry 'link_attention.ipynb'": "a symbolic link",
    "'carol_hw.tar.gz' entry 'hard_attention.ipynb'": "a hard link",
    "'carol_hw.tar.gz' entry 'up'": "a symbolic link",
    "'carol_hw.tar.gz' entry 'fifo_attention.ipynb'": "special file",
    "'trudy_trav.zip' entry '../../../escaped.ipynb'": "climbs out",
    "'trudy_trav.zip' entry '/tmp/": "an absolute path",
    "'trudy_trav.zip' entry 'sub/../../../../deeper.ipynb'": "climbs out",
    "'trudy_trav.zip' entry '..\\\\..\\\\..\\\\windows.ipynb'": "climbs out",
    "'class-trav.zip' entry '../../../escaped.ipynb'": "climbs out",
    "'class-trav.zip' entry '/tmp/": "an absolute path",
    "'class-trav.zip' entry 'sub/../../../../deeper.ipynb'": "climbs out",
    "'class-trav.zip' entry '..\\\\..\\\\..\\\\windows.ipynb'": "climbs out",
    "'zed_bomb.zip' entry 'zed_attention.ipynb'": "over the 64.0 MiB limit for one notebook",
    "'zed_bomb.zip' entry 'ratio.ipynb'": "a compression bomb",
    "'liar_bomb.zip' entry 'liar_attention.ipynb'": "damaged",
    "'tara_bomb.tar.gz'": "a compression bomb",
    "'pax_bomb.tar.gz'": "tar header extension",
    "'victor_nest.zip' entry 'inner.zip'": "an archive inside an archive",
    "'oscar_attention.ipynb'": "over the 64.0 MiB limit",
    "'peggy_attention.ipynb'": "a symbolic link",
    "'linked'": "a symbolic link",
    "'wide_bomb.zip'": "over the limit of 10000 entries",
}
"""What zip_collect must name as not extracted -> a word of the reason it must give."""


PEAK_OF_CHILD = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[2:]); _, status, usage = os.wait4(child.pid, 0); "
                 "open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); sys.exit(os.waitstatus_to_exitcode(status))")
"""Run a command and record its peak resident KiB. Linux carries a process's peak across exec, so the command
is started from this small interpreter rather than from the test process, whose memory the fork would count."""


def zip_collect(root: Path, log: Path) -> tuple[int, int]:
    """Run `nbgrader zip_collect` as an instructor would; return (exit status, peak resident KiB of that process)."""
    peak = log.with_suffix(".peak")
    command = [sys.executable, "-c", PEAK_OF_CHILD, str(peak),
               sys.executable, "-m", "nbgrader", "zip_collect", ASSIGNMENT, f"--CourseDirectory.root={root}"]
    with log.open("w") as out:
        status = subprocess.run(command, cwd=ROOT, env=nbgrader_env(), stdout=out, stderr=subprocess.STDOUT,
                                timeout=600).returncode
    return status, int(peak.read_text())


def tree_bytes(folder: Path) -> int:
    return sum(path.lstat().st_blocks * 512 for path in folder.rglob("*"))


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    outside = tmp_path_factory.mktemp("hostile-collect")
    root = release_course(outside / "course")
    downloaded = root / "downloaded" / ASSIGNMENT
    honest = build_downloads(downloaded / "archive", outside)
    status, peak_kib = zip_collect(root, outside / "zip_collect.log")
    return root, outside, honest, status, peak_kib, (outside / "zip_collect.log").read_text(encoding="utf-8")


def test_the_run_completes_and_every_honest_student_is_collected_on_the_first_run(hostile_class):
    """Are Alice (own archive), Bob (plain file), Carol (tarball), Trudy and Mallory (their own entries beside
    hostile ones), Erin and Frank (a class archive), Ivan (24 MiB of plots) and Walt (a tarball dated -1e20 s) all
    collected, each with their own notebook?"""
    root, _, honest, status, _, log = hostile_class
    assert status == 0, log
    submitted = {path.name: path for path in (root / "submitted").iterdir()}
    assert set(submitted) == set(honest), log
    for student, text in honest.items():
        assert (submitted[student] / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_bytes() == text, student


def test_every_refused_entry_is_named_with_its_reason(hostile_class):
    """Does every hostile entry get its own `Not extracted:` warning with the reason, and a place in the summary?"""
    *_, log = hostile_class
    warnings = [line for line in log.splitlines() if "Not extracted:" in line]
    summary = next(line for line in log.splitlines() if "Safe extractor:" in line)
    for what, reason in REFUSED.items():
        assert any(what in line and reason in line for line in warnings), f"{what}: {reason}\n{log}"
        assert what in summary
    assert f"{len(REFUSED)} left out" in summary


def test_nothing_is_written_outside_the_course_nor_through_a_link(hostile_class):
    """Do traversing, absolute and linked entries leave everything outside extracted/ untouched?"""
    root, outside, *_ = hostile_class
    assert sorted(p.name for p in outside.iterdir()) == ["course", "zip_collect.log", "zip_collect.peak"]
    assert sorted(p.name for p in root.iterdir()) == ["downloaded", "release", "submitted"]
    assert sorted(p.name for p in (root / "downloaded").rglob("*") if p.parent.name == ASSIGNMENT) == [
        "archive", "collected_students.json", "extracted"]  # whom this collect made (grader.nbgrader.earlier_collect)
    assert not any(path.is_symlink() for path in (root / "downloaded" / ASSIGNMENT / "extracted").rglob("*"))
    escaped = [path for path in outside.rglob("*") if re.search(r"escaped|absolute|deeper|windows", path.name)]
    assert escaped == []


def test_extracted_and_submitted_stay_small_and_the_run_modest_in_memory(hostile_class):
    """Do the bombs (380 MiB of padding, a 100 MiB sparse notebook, a 160 MiB tar header) cost neither disk nor
    memory, while an honest 24 MiB notebook with plots is collected?"""
    root, *_, peak_kib, log = hostile_class
    honest_bytes = 28 * MiB  # Ivan's notebook with plots and seven small ones
    assert tree_bytes(root / "downloaded" / ASSIGNMENT / "extracted") < honest_bytes
    assert tree_bytes(root / "submitted") < honest_bytes
    assert peak_kib * 1024 < 300 * MiB, f"zip_collect peaked at {peak_kib >> 10} MiB"
