"""Does the zip_collect plugin map every Colab download to its student, and name every file it leaves out?"""
from __future__ import annotations

import json
import logging
import os
import tracemalloc
from pathlib import Path

import pytest

from grader.nbgrader.collector import MAX_NOTEBOOK_BYTES, ColabFileNameCollector, notebook_stem
from grader.nbgrader.lms_collector import LmsCollector

pytestmark = pytest.mark.unit

RELEASED = ["attention.ipynb"]
NOTEBOOK = json.dumps({"nbformat": 4, "nbformat_minor": 0, "metadata": {}, "cells": []})


def plan(folder: Path, released=RELEASED) -> ColabFileNameCollector:
    collector = ColabFileNameCollector()
    collector.make_plan(folder, released)
    return collector


def put(folder: Path, name: str, text: str = NOTEBOOK, mtime: float | None = None) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


COLAB_NAMES = [
    "attention.ipynb",
    "Copy of attention.ipynb",
    "attention (1).ipynb",
    "Copy of attention (2).ipynb",
    "attention.ipynb 的副本",
    "attention.ipynb 的副本.ipynb",
    "attention.ipynb的副本 (1).ipynb",
    "Copy of Copy of attention.ipynb",
]


@pytest.mark.parametrize("name", COLAB_NAMES)
def test_every_colab_name_is_the_assignment_notebook(tmp_path, name):
    """Is `<id>_<whatever Colab called it>` collected as that student's attention.ipynb?"""
    put(tmp_path, f"s123_{name}")
    collector = plan(tmp_path)
    (path, candidate), = collector.plan.items()
    assert candidate.student_id == "s123" and candidate.notebook == "attention.ipynb"
    assert path.endswith(".ipynb") and collector.collect(path) == {"student_id": "s123", "file_id": "attention.ipynb"}
    assert collector.left_out == {}


@pytest.mark.parametrize("name, stem, number", [
    ("Copy of attention (2).ipynb", "attention", 2),
    ("attention.ipynb 的副本", "attention", 0),
    ("attention (1).ipynb", "attention", 1),
    ("my_work.ipynb", "my_work", 0),
])
def test_notebook_stem_strips_colab_decorations(name, stem, number):
    """Are Colab's "Copy of", "(n)" and "的副本" decorations removed, keeping the copy number?"""
    assert notebook_stem(name) == (stem, number)


@pytest.mark.parametrize("file_name, student", [
    ("2023-cs.01_attention.ipynb", "2023-cs.01"),
    ("alice_my_attention_final.ipynb", "alice"),
    ("王小明_attention.ipynb", "王小明"),
])
def test_student_id_is_everything_before_the_first_underscore(tmp_path, file_name, student):
    """May ids hold letters, digits, '-' and '.', with the first '_' separating the id from the name?"""
    put(tmp_path, file_name)
    (candidate,) = plan(tmp_path).plan.values()
    assert candidate.student_id == student


def test_a_file_it_cannot_map_is_named_in_a_warning_and_the_summary(tmp_path, caplog):
    """Is every file left out named, with the reason, and never silently dropped?"""
    put(tmp_path, "alice_attention.ipynb")
    put(tmp_path, "attention.ipynb")  # no student id
    put(tmp_path, "bob_notes.txt", "just text")  # not a notebook
    put(tmp_path, "_attention.ipynb")  # empty id
    put(tmp_path, "..x_attention.ipynb")  # an id that could climb out of submitted/
    caplog.set_level(logging.INFO)
    collector = plan(tmp_path)
    assert [c.student_id for c in collector.plan.values()] == ["alice"]
    left = {Path(p).name: reason for p, reason in collector.left_out.items()}
    assert set(left) == {"attention.ipynb", "bob_notes.txt", "_attention.ipynb", "..x_attention.ipynb"}
    assert "no student id" in left["attention.ipynb"] and "not a notebook" in left["bob_notes.txt"]
    summary = [r.getMessage() for r in caplog.records if "Colab collector:" in r.getMessage()]
    assert len(summary) == 1 and "1 student(s)" in summary[0]
    for name in left:
        assert name in summary[0]
        assert any(f"Not collected: {name!r}" in r.getMessage() for r in caplog.records)
    assert collector.collect(str(tmp_path / "attention.ipynb")) is None


@pytest.mark.parametrize("collector_class", [ColabFileNameCollector, LmsCollector])
@pytest.mark.parametrize("name", ["kv_cache.ipynb", "kv_cache (1).ipynb", "kv_cache.ipynb 的副本"])
def test_an_assignment_named_with_an_underscore_is_no_students_file(tmp_path, name, collector_class):
    """Is a download named as the assignment `kv_cache`, without an id, left out rather than read as student `kv`'s
    `cache.ipynb`, while `<id>_kv_cache.ipynb` is that student's (by the Colab collector and by the LMS collector
    that nbgrader_config.py names, reading the same `<student_id>_` names)?"""
    put(tmp_path, name)
    put(tmp_path, "alice_kv_cache.ipynb")
    put(tmp_path, "s.1_Copy of kv_cache (2).ipynb")
    collector = collector_class()
    collector.make_plan(tmp_path, ["kv_cache.ipynb"])
    assert sorted((c.student_id, c.notebook) for c in collector.plan.values()) == [
        ("alice", "kv_cache.ipynb"), ("s.1", "kv_cache.ipynb")]
    (reason,) = collector.left_out.values()
    assert "no student id" in reason


def test_of_two_files_from_one_student_the_newest_is_collected_and_the_other_named(tmp_path):
    """When a student uploaded two copies, is the newer one collected and the older one reported, not lost?"""
    older = put(tmp_path, "alice_attention.ipynb", mtime=1_700_000_000)
    newer = put(tmp_path, "alice_Copy of attention.ipynb", mtime=1_700_000_100)
    collector = plan(tmp_path)
    assert list(collector.plan) == [str(newer)]
    assert "'alice_Copy of attention.ipynb' is collected instead" in collector.left_out[str(older)]


def test_a_notebook_without_the_ipynb_suffix_is_collected_from_a_copy_and_left_as_it_is(tmp_path):
    """`attention.ipynb 的副本` (nbgrader names what it collects after the suffix): is it collected from a copy ending
    in .ipynb, in the kit's own folder, with the student's file left as it was, name, bytes and time?"""
    original = put(tmp_path, "alice_attention.ipynb 的副本", mtime=1_700_000_000)
    before = original.read_bytes()
    collector = plan(tmp_path)
    (copy, candidate), = collector.plan.items()
    assert Path(copy).name == "alice_attention.ipynb 的副本.ipynb" and ".kit-copies" in Path(copy).parts
    assert candidate.student_file == original and original.read_bytes() == before
    assert original.stat().st_mtime == Path(copy).stat().st_mtime == 1_700_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == [".kit-copies", "alice_attention.ipynb 的副本"]


def test_with_several_released_notebooks_an_unknown_name_is_reported(tmp_path):
    """With more than one notebook in the assignment, is a name that matches none of them reported?"""
    put(tmp_path, "alice_Copy of part2.ipynb")
    put(tmp_path, "bob_scratch.ipynb")
    collector = plan(tmp_path, ["part1.ipynb", "part2.ipynb"])
    assert [c.notebook for c in collector.plan.values()] == ["part2.ipynb"]
    assert "cannot tell which" in collector.left_out[str(tmp_path / "bob_scratch.ipynb")]


def test_an_oversized_notebook_is_left_out_before_it_is_read(tmp_path):
    """Is a notebook over the size limit named with a plain reason, without reading it into memory?"""
    put(tmp_path, "bob_attention.ipynb")
    big = put(tmp_path, "alice_attention.ipynb")
    with big.open("r+b") as handle:
        handle.truncate(MAX_NOTEBOOK_BYTES + 1)  # sparse: large to whoever reads it, nothing on this disk
    tracemalloc.start()
    collector = plan(tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert [c.student_id for c in collector.plan.values()] == ["bob"]
    assert "over the 64 MiB limit for one notebook: not read" in collector.left_out[str(big)]
    assert peak < 8 << 20


def test_a_link_is_left_out_and_never_followed(tmp_path):
    """Is a link in the extracted folder (to a notebook or a folder elsewhere) named, not collected through?"""
    elsewhere = put(tmp_path / "elsewhere", "solution.ipynb")
    (tmp_path / "downloads").mkdir()
    link = tmp_path / "downloads" / "carol_attention.ipynb"
    link.symlink_to(elsewhere)
    folder_link = tmp_path / "downloads" / "more"
    folder_link.symlink_to(elsewhere.parent)
    collector = plan(tmp_path / "downloads")
    assert collector.plan == {} and "a link" in collector.left_out[str(link)]
    assert "a link to a folder" in collector.left_out[str(folder_link)]


def test_a_clean_collection_logs_no_warning(tmp_path, caplog):
    """Every file collected: the summary is information, not a WARNING an instructor has to read as a problem."""
    put(tmp_path, "alice_attention.ipynb")
    put(tmp_path, "bob_Copy of attention.ipynb")
    put(tmp_path, "carol_attention.ipynb 的副本")  # Colab's name for a copy: renamed, routinely
    caplog.set_level(logging.INFO)
    plan(tmp_path)
    summary = [r for r in caplog.records if "Colab collector:" in r.getMessage()]
    assert len(summary) == 1 and summary[0].levelno == logging.INFO and "3 student(s)" in summary[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def deep_metadata_notebook(depth: int, code: str = "x = 1") -> str:
    """A notebook whose metadata nests `depth` objects deep (written as text: json.dumps itself recurses)."""
    cell = json.dumps({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code})
    return ('{"nbformat": 4, "nbformat_minor": 5, "cells": [' + cell + '], "metadata": {"x": '
            + '{"a": ' * depth + "1" + "}" * depth + "}}")


@pytest.mark.parametrize("depth", [800, 5000])
def test_a_notebook_nested_deeper_than_nbformat_reads_is_collected_from_a_cut_copy(tmp_path, depth):
    """Metadata nested 800 (nbformat's RecursionError) or 5,000 (json's too) levels deep: is the notebook collected
    from a copy nbformat reads, with the same code cell, and the student's file left as it is?"""
    import nbformat

    original = put(tmp_path, "s1_attention.ipynb", deep_metadata_notebook(depth, "def f():\n    return 42\n"))
    before = original.read_bytes()
    put(tmp_path, "s2_attention.ipynb")
    collector = plan(tmp_path)
    chosen = {c.student_id: c.path for c in collector.plan.values()}
    assert set(chosen) == {"s1", "s2"} and not collector.left_out
    notebook = nbformat.read(chosen["s1"], as_version=4)
    assert [cell.source for cell in notebook.cells] == ["def f():\n    return 42\n"]
    assert original.read_bytes() == before and chosen["s1"] != original
