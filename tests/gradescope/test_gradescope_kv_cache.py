"""Does a Gradescope autograder built for the second lab (`gradescope build --exercise kv_cache`) grade a lab-2 upload
as that lab, run as Gradescope runs it: the solution 20/20, a Colab-saved stub 0 with `not-implemented`, a mutant below
full marks with its id named in both languages?"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.catalog import catalog
from support import colab_notebooks as cn
from support.paths import ROOT, SUBMISSIONS

pytestmark = pytest.mark.sandbox

STUB_NOTEBOOK = ROOT / "release" / "kv_cache" / "kv_cache.ipynb"


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """The zip `python -m grader gradescope build --exercise kv_cache` writes, unpacked as Gradescope's source."""
    where = tmp_path_factory.mktemp("kv-cache-autograder")
    done = subprocess.run([sys.executable, "-m", "grader", "gradescope", "build", "--exercise", "kv_cache",
                           "--out", str(where / "autograder.zip")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(where / "autograder.zip") as archive:
        archive.extractall(where / "source")
    return where / "source"


def run_autograder(source: Path, root: Path, upload: dict[str, bytes]) -> dict:
    """The zip's run_autograder on an upload, in a fresh process that grades afresh, as Gradescope runs it."""
    (root / "submission").mkdir(parents=True)
    for name, content in upload.items():
        (root / "submission" / name).write_bytes(content)
    shutil.copytree(source, root / "source")
    script = root / "run_autograder"
    shutil.copyfile(root / "source" / "run_autograder", script)
    script.chmod(0o755)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("ATTENTION_KIT_REPORT_CACHE", None)
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def test_the_zip_runs_the_second_lab(autograder):
    assert "gradescope run --exercise kv_cache --root" in (autograder / "run_autograder").read_text(encoding="utf-8")


def test_the_solution_scores_20_of_20(autograder, tmp_path):
    results = run_autograder(autograder, tmp_path, {
        "kv_cache.py": (ROOT / "solutions" / "kv_cache" / "kv_cache.py").read_bytes()})
    assert results["score"] == 20.0 == sum(t["max_score"] for t in results["tests"]), results["output"]
    assert all(t["name"].split(".")[0] in ("repeat", "cache", "gqa", "integrity") for t in results["tests"]
               if not t["name"].startswith("instructor only"))


def test_a_colab_saved_stub_scores_0_and_says_it_is_not_implemented(autograder, tmp_path):
    stub = cn.colab_saved(nbformat.read(STUB_NOTEBOOK, as_version=4), seed="gradescope")
    results = run_autograder(autograder, tmp_path, {"Copy of kv_cache.ipynb": nbformat.writes(stub).encode()})
    assert results["score"] == 0.0 and sum(t["max_score"] for t in results["tests"]) == 20.0, results["output"]
    assert any("not-implemented" in t["output"] for t in results["tests"])


def test_a_mutant_loses_points_with_its_id_named_in_both_languages(autograder, tmp_path):
    mutant = SUBMISSIONS / "kv_cache" / "mutants" / "cache-mask-offset.py"
    results = run_autograder(autograder, tmp_path, {"kv_cache.py": mutant.read_bytes()})
    assert results["score"] < 20.0, results["output"]
    entry = catalog()["cache-mask-offset"]
    assert any(t["status"] == "failed" and entry["title_zh"] in t["output"] and entry["title_en"] in t["output"]
               for t in results["tests"])
