"""Does `python -m pytest -p grader.pytest_plugin --submission PATH` give, item by item, what `grader grade` gives?

A few representative submissions go through the whole command in a fresh process (two of them with its
own fork server and grading, two reading the session's report cache); every correct style and mutant goes
through the same plugin in this process (pytester), reading the session's report cache as the command
reads an instructor's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
import torch

from support.hand_ins import own_order

from support.paths import REFERENCE, ROOT, STUBS, SUBMISSIONS
from grader.process import REPORT_CACHE_ENV

pytestmark = pytest.mark.sandbox
pytest_plugins = ["pytester"]
PLUGIN_ARGS = ["-p", "grader.pytest_plugin", "--grader-lang", "en", "-p", "no:cacheprovider", "-q"]
# every correct style and every mutant: the plugin must agree with `grader grade` on all of them
SUBMISSIONS_GRADED = [REFERENCE] + own_order(
    [*(SUBMISSIONS / "correct").glob("*.py"), *(SUBMISSIONS / "mutants").glob("*.py")], __name__)
# end to end in a fresh process: full marks and one mistake graded afresh there (its own fork server, its own
# grading); nothing done and tampering read from the session's reports, as an instructor's re-run reads its cache
END_TO_END = {REFERENCE: True, SUBMISSIONS / "mutants" / "missing-scale.py": True, STUBS: False,
              SUBMISSIONS / "hostile" / "patched_comparisons.py": False}


def run_plugin(path, tmp_path, *args: str, afresh: bool = True) -> tuple[subprocess.CompletedProcess, ElementTree.Element]:
    """The command in a fresh process; `afresh`: without the session's report cache, so it grades."""
    xml = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if not (afresh and k == REPORT_CACHE_ENV)}
    done = subprocess.run([sys.executable, "-m", "pytest", *PLUGIN_ARGS, "--submission", str(path),
                           f"--junitxml={xml}", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return done, ElementTree.parse(xml).getroot()


def assert_items_agree(report: dict, junit: ElementTree.Element, returncode: int, output: str) -> None:
    """One junit testcase per check id, failed exactly when the check failed, with its points as properties;
    the real-CUDA variants skipped where there is no CUDA."""
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
    for name in ("sdpa.device[cuda]", "mha.device[cuda]"):  # run on CUDA; elsewhere skipped, saying why
        skipped = cases[name].find("skipped")
        if torch.cuda.is_available():
            assert skipped is None, name
        else:
            assert skipped is not None and skipped.get("message", "").endswith(
                f"no CUDA device here: the real-CUDA variant of this check did not run "
                f"(its meta-device variant is {name.removesuffix('[cuda]')})"), (name, ElementTree.tostring(cases[name]))
    assert (returncode == 0) == all(c["passed"] for c in report["checks"]), output[-2000:]


@pytest.mark.parametrize("path", END_TO_END, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_the_command_agrees_with_grader_grade(path, tmp_path, graded):
    report = graded(path)  # before the command: the two that read the cache find it there
    done, junit = run_plugin(path, tmp_path, afresh=END_TO_END[path])
    assert_items_agree(report, junit, done.returncode, done.stdout)


@pytest.mark.parametrize("path", SUBMISSIONS_GRADED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_items_agree_with_grader_grade(path, pytester, graded):
    report = graded(path)  # fills the session's report cache, which the plugin reads
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "--submission", str(path), "--junitxml=junit.xml")
    junit = ElementTree.parse(pytester.path / "junit.xml").getroot()
    assert_items_agree(report, junit, result.ret, str(result.stdout))


def test_part_marker_and_keyword_select_items(tmp_path, graded):
    """What is selected, not what is graded: the report comes from the session's cache."""
    graded(SUBMISSIONS / "mutants" / "missing-scale.py")
    done, junit = run_plugin(SUBMISSIONS / "mutants" / "missing-scale.py", tmp_path, "-m", "part2", afresh=False)
    names = [case.get("name") for case in junit.iter("testcase")]
    assert names and all(name.startswith("mha.") for name in names) and done.returncode == 0, done.stdout[-2000:]
    done, junit = run_plugin(SUBMISSIONS / "mutants" / "missing-scale.py", tmp_path, "-k", "sdpa.values", afresh=False)
    assert [case.get("name") for case in junit.iter("testcase")] == ["sdpa.values"] and done.returncode == 1
