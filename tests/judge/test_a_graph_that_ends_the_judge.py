"""Does a graph that ends the judge cost its own hand-in only?

The judge (grader.judge) runs every graph of a grading in a process of its own. Whatever ends it (a crash, its
memory or CPU time exhausted, no answer in time) fails the part whose graph it was running, as
`submission-too-costly` with a message in Chinese and English; the grading goes on, the other part gets a fresh
judge, and so does the next hand-in. Two ways to end it: the forged graph of issue 41 (an `aten._reshape_alias`
whose strides reach 2**40 bytes past its storage, sent from the worker as the recorder writes graphs), graded with
every worker rule off; and a signal sent to the judge while it holds an honest hand-in's Part 1 graph, which does
not depend on any operator being runnable.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from support.paths import ROOT, SUBMISSIONS
from support.rules_off import GRADER_WITHOUT_RULES
from grader.grade import grade_submission
from grader.judge import process
from grader.sandbox.worker_process import _process_tree

pytestmark = pytest.mark.sandbox

FORGED = SUBMISSIONS / "judge" / "reshape_alias_past_its_storage.py"
HONEST = SUBMISSIONS / "correct" / "additive_finfo_min.py"
PART_POINTS = {"sdpa": 10.0, "mha": 10.0}  # README: 20 points, 10 a part


def points(report: dict, part: str) -> float:
    return sum(check["points"] for check in report["checks"] if check["part"] == part)


def test_the_forged_graph_costs_its_hand_in_part_and_the_grader_lives():
    # a process of its own: run anywhere but a judge, this graph ends the process that runs it
    done = subprocess.run([*GRADER_WITHOUT_RULES, "grade", str(FORGED), "--json", "--lang", "en"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert points(report, "sdpa") == 0.0
    assert {"submission-too-costly", "tampering"} & set(report["mistakes"]), report["mistakes"]
    assert points(report, "mha") == PART_POINTS["mha"]


@pytest.fixture
def judges_started(monkeypatch) -> list:
    started = []
    real_start = process.Judge._start

    def counted(self, *args):
        started.append(self)
        real_start(self, *args)

    monkeypatch.setattr(process.Judge, "_start", counted)
    return started


def test_a_judge_that_dies_mid_graph_costs_that_part_only_and_the_next_hand_in_gets_a_fresh_one(
        monkeypatch, judges_started):
    real_call = process.Judge.call
    crashed = []

    def crash_on_part_1(self, probe, message, seconds):
        if probe == "sdpa" and not crashed:
            crashed.append(self.process.pid)
            for member in _process_tree(self.process.pid):  # the judge, and the pid 1 of its namespace
                os.kill(member, signal.SIGSEGV)
        return real_call(self, probe, message, seconds)

    monkeypatch.setattr(process.Judge, "call", crash_on_part_1)
    report = grade_submission(HONEST)
    assert crashed and len(judges_started) == 2  # Part 2's graphs in a fresh judge
    failed = [check for check in report["checks"] if "submission-too-costly" in check["mistakes"]]
    assert failed and {check["part"] for check in failed} == {"sdpa"}
    assert all("判定进程" in check["message_zh"] and "the grader's judge" in check["message_en"]
               and "signal 11" in check["message_en"] for check in failed), failed[0]["message_en"]
    assert points(report, "sdpa") < PART_POINTS["sdpa"] and points(report, "mha") == PART_POINTS["mha"]

    monkeypatch.setattr(process.Judge, "call", real_call)
    next_report = grade_submission(HONEST)
    assert next_report["score"] == sum(PART_POINTS.values()) and len(judges_started) == 3  # one judge a grading
