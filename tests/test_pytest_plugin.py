"""Does `python -m pytest -p grader.pytest_plugin --submission PATH` give, item by item, what `grader grade` gives?"""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
import torch

from conftest import REFERENCE, ROOT, SUBMISSIONS

pytestmark = pytest.mark.slow
# every correct style and every mutant: the plugin must agree with `grader grade` on all of them
SUBMISSIONS_GRADED = [REFERENCE] + sorted((SUBMISSIONS / "correct").glob("*.py")) + sorted(
    (SUBMISSIONS / "mutants").glob("*.py"))


def run_plugin(path, tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, ElementTree.Element]:
    xml = tmp_path / "junit.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "grader.pytest_plugin", "--submission", str(path),
                           "--grader-lang", "en", f"--junitxml={xml}", "-p", "no:cacheprovider", "-q", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    return done, ElementTree.parse(xml).getroot()


@pytest.mark.parametrize("path", SUBMISSIONS_GRADED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_items_agree_with_grader_grade(path, tmp_path, graded):
    """One junit testcase per check id, failed exactly when the check failed, with its points as properties?"""
    report = graded(path)
    done, junit = run_plugin(path, tmp_path)
    cases = {case.get("name"): case for case in junit.iter("testcase")}
    assert set(cases) == {c["id"] for c in report["checks"]} | {"sdpa.device[cuda]", "mha.device[cuda]"}
    for check in report["checks"]:
        case = cases[check["id"]]
        assert (case.find("failure") is None) == check["passed"], check["id"]
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert float(properties["points"]) == check["points"], check["id"]
        assert float(properties["max_points"]) == check["max_points"]
        assert properties["mistakes"] == ",".join(check["mistakes"])
        if not check["passed"]:
            assert check["message_zh"].splitlines()[0] in case.find("failure").text
    assert (done.returncode == 0) == all(c["passed"] for c in report["checks"]), done.stdout[-2000:]
    for name in ("sdpa.device[cuda]", "mha.device[cuda]"):  # run on CUDA; elsewhere skipped, saying why
        skipped = cases[name].find("skipped")
        if torch.cuda.is_available():
            assert skipped is None, name
        else:
            assert skipped is not None and skipped.get("message", "").endswith(
                f"no CUDA device here: the real-CUDA variant of this check did not run "
                f"(its meta-device variant is {name.removesuffix('[cuda]')})"), (name, ElementTree.tostring(cases[name]))


def test_part_marker_and_keyword_select_items(tmp_path):
    done, junit = run_plugin(SUBMISSIONS / "mutants" / "missing-scale.py", tmp_path, "-m", "part2")
    names = [case.get("name") for case in junit.iter("testcase")]
    assert names and all(name.startswith("mha.") for name in names) and done.returncode == 0, done.stdout[-2000:]
    done, junit = run_plugin(SUBMISSIONS / "mutants" / "missing-scale.py", tmp_path, "-k", "sdpa.values")
    assert [case.get("name") for case in junit.iter("testcase")] == ["sdpa.values"] and done.returncode == 1
