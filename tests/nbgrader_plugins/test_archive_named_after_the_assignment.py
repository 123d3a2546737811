"""Is a name that starts with the assignment's whole name no student's, also when that name holds an underscore: a
class archive `kv_cache_all.zip` (not student `kv`'s archive), a member `kv_cache.ipynb` in Alice's own archive (hers,
not `kv`'s), while `<student_id>_…` archives and members stay their student's?"""
from __future__ import annotations

import zipfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from traitlets.config import Configurable

from grader.nbgrader.safe_extractor import SafeExtractor

pytestmark = pytest.mark.unit

NOTEBOOK = nbformat.writes(nbformat.v4.new_notebook()).encode()


def extracted(tmp_path: Path, assignment: str, archive_name: str, members: list[str]) -> tuple[list[str], list]:
    """What zip_collect's extractor writes from one archive in `downloaded/<assignment>/archive/`, and what it refuses."""
    app = Configurable()
    app.coursedir = SimpleNamespace(assignment_id=assignment)  # what ZipCollectApp gives its extractor
    archive, out = tmp_path / "archive", tmp_path / "extracted"
    archive.mkdir()
    out.mkdir()
    with zipfile.ZipFile(archive / archive_name, "w") as handle:
        for member in members:
            handle.writestr(member, NOTEBOOK)
    extractor = SafeExtractor(parent=app)
    extractor.extract(str(archive), str(out))
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()), extractor.refused


@pytest.mark.parametrize("assignment, archive_name", [("kv_cache", "kv_cache_all.zip"), ("kv_cache", "kv_cache.zip"),
                                                      ("attention", "attention_all.zip")])
def test_an_archive_named_after_the_assignment_delivers_every_students_notebook(tmp_path, assignment, archive_name):
    files, refused = extracted(tmp_path, assignment, archive_name,
                               [f"alice_{assignment}.ipynb", f"bob_Copy of {assignment}.ipynb"])
    stem = archive_name.removesuffix(".zip")
    assert files == [f"{stem}/alice_{assignment}.ipynb", f"{stem}/bob_Copy of {assignment}.ipynb"], refused
    assert refused == []


@pytest.mark.parametrize("member", ["kv_cache.ipynb", "kv_cache (1).ipynb", "kv_cache_final.ipynb"])
def test_a_students_own_archive_delivers_their_notebook_named_after_the_assignment_and_no_one_elses(tmp_path, member):
    """`alice_hw.zip` holding `kv_cache.ipynb` is Alice's notebook (not student `kv`'s, refused in Alice's archive);
    a member named for another student is still refused."""
    files, refused = extracted(tmp_path, "kv_cache", "alice_hw.zip", [member, "bob_kv_cache.ipynb"])
    assert files == [f"alice_hw/alice_{member}"], refused
    assert [reason for _, reason in refused] == [
        "names student 'bob', but this is 'alice''s archive: an archive delivers only its own student's notebook"]
