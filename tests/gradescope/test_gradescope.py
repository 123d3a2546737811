"""Does the Gradescope autograder give every submission the score `grader grade` gives, in results.json as
Gradescope documents it, with the hidden checks kept back until grades are published?

Unit: results.json from reports, the zip's contents. Sandbox: run_autograder's entry function in a
temporary /autograder tree on every correct style, mutant and hostile file (one report cache for the
session, so each file is graded once), and the real run_autograder script on a correct style and a hostile
file, each a fresh process that grades afresh (a mutant there would add nothing the entry function's runs lack).
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from support.hand_ins import header, own_order

from support.measures import short_memory

from support.paths import SUBMISSIONS

from support.session import SESSION_REPORTS
from grader.gradescope import build
from grader.gradescope.results import TEST_VISIBILITIES, no_submission, results_json
from grader.gradescope.run import pick_submission, run_autograder
from grader.exercises.attention import EXERCISE

TOP_LEVEL = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
             "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
TEST_FIELDS = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
               "tags", "visibility", "extra_data"}
SUBMISSION_FILES = own_order(
    [p for folder in ("correct", "mutants", "hostile") for p in (SUBMISSIONS / folder).glob("*.py")], __name__)


def assert_gradescope_results(results: dict) -> None:
    """Only Gradescope's documented fields, each of the documented type; visibilities from its list."""
    assert set(results) <= TOP_LEVEL and isinstance(results["score"], float)
    assert results["visibility"] in TEST_VISIBILITIES and results["stdout_visibility"] in TEST_VISIBILITIES
    for test in results["tests"]:
        assert set(test) <= TEST_FIELDS and {"name", "score", "max_score", "output", "visibility"} <= set(test)
        assert isinstance(test["score"], float) and isinstance(test["max_score"], float)
        assert 0.0 <= test["score"] <= test["max_score"] and test["status"] in ("passed", "failed")
        assert test["visibility"] in TEST_VISIBILITIES and isinstance(test["output"], str)


def report(checks, **extra) -> dict:
    entries = [{"id": i, "part": "sdpa", "title_zh": "标题", "title_en": "title", "visibility": v, "passed": p,
                "points": pts if p else 0.0, "max_points": pts, "mistakes": [] if p else [m],
                "message_zh": "" if p else f"错 {m}", "message_en": "" if p else f"wrong {m}"}
               for i, v, p, pts, m in checks]
    return {"score": sum(c["points"] for c in entries), "max_score": sum(c["max_points"] for c in entries),
            "checks": entries, "mistakes": [c["mistakes"][0] for c in entries if c["mistakes"]], "advice": [], **extra}


@pytest.mark.unit
def test_hidden_checks_wait_for_publishing_and_the_visible_text_never_names_them():
    """Are hidden checks `after_published`, and do the top output and visible tests say nothing of them,
    not even through a verified fix that also fixes a hidden check?"""
    fix = {"checks": ["sdpa.causal_zeros", "sdpa.values"], "message_zh": "改第 3 行 sdpa.values", "message_en": "line 3"}
    results = results_json(report([("sdpa.causal_zeros", "public", False, 2.0, "mask-diagonal"),
                                   ("sdpa.values", "hidden", False, 2.0, "mask-direction")], fixes=[fix]), "a.py")
    assert_gradescope_results(results)
    visible, hidden = results["tests"]
    assert (visible["visibility"], hidden["visibility"]) == ("visible", "after_published")
    assert "错 mask-diagonal" in visible["output"] and "wrong mask-diagonal" in visible["output"]
    assert "line 3" in hidden["output"] and "line 3" not in visible["output"]
    shown = results["output"] + visible["output"] + visible["name"]
    assert "sdpa.values" not in shown and "mask-direction" not in shown


@pytest.mark.unit
def test_isolation_missing_is_instructor_only():
    """Do isolation layers the container refused go to a 0-point test only instructors see?"""
    results = results_json(report([("sdpa.shapes", "public", True, 2.0, "")], isolation_missing=["seccomp"]), "a.py")
    assert_gradescope_results(results)
    (isolation,) = [t for t in results["tests"] if "seccomp" in t["output"]]
    assert (isolation["visibility"], isolation["max_score"]) == ("hidden", 0.0)
    assert "seccomp" not in results["output"]
    assert_gradescope_results(no_submission(["notes.txt"], "attention"))


@pytest.mark.unit
def test_summary_counts_exactly_the_visible_tests():
    """Three public checks worth 7 points (one failed) and two hidden: does the summary count 2 of the 3 visible
    tests as passed, give their points apart, and say nothing of the hidden ones?"""
    results = results_json(report([("sdpa.shapes", "public", True, 2.0, ""), ("sdpa.causal_zeros", "public", False, 3.0,
                                    "mask-diagonal"), ("mha.shapes", "public", True, 2.0, ""),
                                   ("sdpa.values", "hidden", True, 5.0, ""), ("mha.values", "hidden", False, 8.0,
                                                                               "head-split")]), "attention.ipynb")
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert len(visible) == 3
    assert "Public checks: 2 / 3 通过 passed, 4 / 7 分 points" in results["output"]
    assert "head-split" not in results["output"]


@pytest.mark.unit
def test_autograder_zip_has_gradescope_layout(tmp_path):
    """Does autograder.zip hold executable setup.sh and run_autograder at its top, the pinned CPU torch and the
    kit's grader with its catalog, and no solutions?"""
    with zipfile.ZipFile(build.build(tmp_path / "autograder.zip", "attention")) as archive:
        names = set(archive.namelist())
        setup = archive.read("setup.sh").decode()
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder", "grader/mistakes.json", "grader/gradescope/run.py"} <= names
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    assert "'torch==2.13.0' --index-url https://download.pytorch.org/whl/cpu" in setup
    assert not any(n.startswith(("solutions/", "source/", "tests/")) for n in names)


@pytest.fixture(scope="session")
def report_cache() -> Path:
    """The session's report cache (tests/conftest.py): every file here is graded once for the whole suite."""
    return SESSION_REPORTS


def autograder_tree(root: Path, submission: Path) -> Path:
    (root / "submission").mkdir(parents=True)
    shutil.copyfile(submission, root / "submission" / submission.name)
    return root


@pytest.mark.sandbox
@pytest.mark.parametrize("path", SUBMISSION_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_run_autograder_scores_as_grader_grade(tmp_path, path, report_cache):
    """Does run_autograder in an /autograder-shaped tree give the score `grader grade` gives, test by test?
    A file that hoards memory until the limit is graded with 512 MiB, which it trips at once, not after
    filling 3 GiB in each of its calls (no other test grades the hostile bomb with the default limits)."""
    from grader.grade import grade_submission

    limits = short_memory() if header(path, "expect") == "memory-limit" else None
    expected = grade_submission(path, cache=report_cache, limits=limits)
    results = run_autograder(autograder_tree(tmp_path, path), exercise=EXERCISE, cache=report_cache, limits=limits)
    assert json.loads((tmp_path / "results" / "results.json").read_text(encoding="utf-8")) == results
    assert_gradescope_results(results)
    assert results["score"] == expected["score"]
    checks = [t for t in results["tests"] if not t["name"].startswith("instructor only")]
    assert [t["score"] for t in checks] == [c["points"] for c in expected["checks"]]


@pytest.mark.sandbox
@pytest.mark.parametrize("name", ["correct/pytorch_docs_reference_style.py", "hostile/exit_at_import.py"])
def test_real_run_autograder_script(tmp_path, name, report_cache):
    """Does the run_autograder script from autograder.zip, run as Gradescope runs it, write the same score?"""
    from grader.grade import grade_submission

    root = autograder_tree(tmp_path / "autograder", SUBMISSIONS / name)
    with zipfile.ZipFile(build.build(tmp_path / "autograder.zip", "attention")) as archive:
        archive.extractall(root / "source")
    script = root / "run_autograder"
    shutil.copyfile(root / "source" / "run_autograder", script)
    script.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("ATTENTION_KIT_REPORT_CACHE", None)
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert_gradescope_results(results)
    assert results["score"] == grade_submission(SUBMISSIONS / name, cache=report_cache)["score"]


@pytest.mark.sandbox
def test_a_container_that_refuses_isolation_layers_still_grades_and_tells_only_the_instructor(tmp_path, monkeypatch):
    """Where a layer is refused (here: no uid of its own for the worker, as in a container without spare uids),
    does a correct submission keep full marks, with the missing layers in a test only instructors see?"""
    from grader.sandbox import worker_identity

    monkeypatch.setattr(worker_identity, "allocate", lambda: None)
    results = run_autograder(autograder_tree(tmp_path, SUBMISSIONS / "correct" / "pytorch_docs_reference_style.py"),
                             exercise=EXERCISE)
    assert_gradescope_results(results)
    (isolation,) = [t for t in results["tests"] if t["name"].startswith("instructor only")]
    assert isolation["visibility"] == "hidden" and "uid drop" in isolation["output"]
    assert results["score"] == sum(t["max_score"] for t in results["tests"])
    assert "uid drop" not in results["output"]


@pytest.mark.sandbox
def test_a_second_notebook_is_named_and_stdout_tells_the_instructor_what_ran(tmp_path, report_cache, capsys):
    """A submission of `attention.py` and a second notebook `draft.ipynb`: does the student's summary name the one not
    graded, and does stdout (Gradescope's Autograder Output, results/stdout) say which file was graded and which
    sandbox layers ran?"""
    root = autograder_tree(tmp_path, SUBMISSIONS / "correct" / "pytorch_docs_reference_style.py")
    (root / "submission" / "pytorch_docs_reference_style.py").rename(root / "submission" / "attention.py")
    (root / "submission" / "draft.ipynb").write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}',
                                                     encoding="utf-8")
    results = run_autograder(root, exercise=EXERCISE, cache=report_cache)
    assert "Graded file: attention.py" in results["output"]
    assert "Also uploaded, not graded: draft.ipynb" in results["output"]
    stdout = capsys.readouterr().out
    assert "graded attention.py; also uploaded, not graded: draft.ipynb" in stdout
    assert "sandbox layers: " in stdout and f"score {results['score']:g} / 20" in stdout


@pytest.mark.unit
@pytest.mark.parametrize("newer, older", [("attention (1).ipynb", "Copy of attention.ipynb"),
                                          ("Copy of attention.ipynb", "attention (1).ipynb")])
def test_of_two_notebooks_the_newest_is_graded_and_the_other_named(tmp_path, newer, older):
    """A student uploads `Copy of attention.ipynb` and `attention (1).ipynb`: is the newer one graded, whichever its
    name (the LMS collector's rule), with equal times the higher copy number, and the other named as not graded?"""
    for name, mtime in ((older, 1_700_000_000), (newer, 1_700_000_100), ("notes.txt", 1_700_000_200)):
        (tmp_path / name).write_text('{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}', encoding="utf-8")
        os.utime(tmp_path / name, (mtime, mtime))
    chosen, seen = pick_submission(tmp_path, "attention")
    assert chosen == tmp_path / newer and sorted(seen) == sorted([newer, older, "notes.txt"])
    summary = results_json(report([("sdpa.shapes", "public", True, 2.0, "")]), chosen.name, [older], "attention")["output"]
    assert f"Graded file: {newer}" in summary and f"Also uploaded, not graded: {older}" in summary
    for name in (newer, older):
        os.utime(tmp_path / name, (1_700_000_000, 1_700_000_000))
    assert pick_submission(tmp_path, "attention")[0] == tmp_path / "attention (1).ipynb"


@pytest.mark.unit
def test_a_file_named_as_the_assignment_is_graded_before_a_newer_notebook_named_otherwise(tmp_path):
    """`attention.py` and a newer `draft.ipynb`: is the file named as the assignment graded, however new the other?"""
    for name, mtime in (("attention.py", 1_700_000_000), ("draft.ipynb", 1_700_000_100)):
        (tmp_path / name).write_text("", encoding="utf-8")
        os.utime(tmp_path / name, (mtime, mtime))
    assert pick_submission(tmp_path, "attention")[0] == tmp_path / "attention.py"


@pytest.mark.unit
def test_an_autograder_grades_the_exercise_it_was_built_for(tmp_path):
    """One zip per assignment: its run_autograder names the exercise, and of a second lab's upload the file named as
    that lab is graded, not a newer notebook of the first lab."""
    assert "gradescope run --exercise kv_cache --root" in build.run_autograder_sh(0.0, "kv_cache")
    for name, mtime in (("Copy of kv_cache.ipynb", 1_700_000_000), ("attention.ipynb", 1_700_000_100)):
        (tmp_path / name).write_text("", encoding="utf-8")
        os.utime(tmp_path / name, (mtime, mtime))
    assert pick_submission(tmp_path, "kv_cache")[0] == tmp_path / "Copy of kv_cache.ipynb"
    assert pick_submission(tmp_path, "attention")[0] == tmp_path / "attention.ipynb"
    assert "kv_cache.ipynb" in no_submission([], "kv_cache")["output"]
