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

import dataclasses
import json
import os
import select
import signal
import subprocess

import pytest
import torch

from support.paths import ROOT, SUBMISSIONS
from support.rules_off import GRADER_WITHOUT_RULES
from grader.checks.student_code import StudentCode
from grader.grade import default_limits, grade_submission
from grader.judge import process
from grader.sandbox.requests import Probe, SdpaRequest, checked
from grader.sandbox.worker_process import _process_tree

pytestmark = pytest.mark.sandbox

FORGED = SUBMISSIONS / "judge" / "reshape_alias_past_its_storage.py"
POOL_WINDOW = SUBMISSIONS / "judge" / "pool_window_past_the_cost_bound.py"
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


def test_a_pooling_window_past_the_cost_bound_is_refused_before_the_judge_runs_it():
    """Red team 3's route 8: a `max_pool1d` whose 4 Mi window makes it 5 * 10**13 comparisons over 16 Mi elements,
    forged from the worker with every rule off. Priced as the elements it touches, it ran in the judge until the
    reply's deadline; priced by its window, the judge refuses it before it runs and says so."""
    done = subprocess.run([*GRADER_WITHOUT_RULES, "grade", str(POOL_WINDOW), "--json", "--lang", "en"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    refused = [c for c in report["checks"] if "submission-too-costly" in c["mistakes"]]
    assert refused and {c["part"] for c in refused} == {"sdpa"}, report["mistakes"]
    assert all("would cost over 4e+10 multiply-adds at aten.max_pool1d" in c["message"] for c in refused), \
        refused[0]["message"]
    assert points(report, "sdpa") == 0.0 and points(report, "mha") == PART_POINTS["mha"]


@pytest.fixture
def judges_started(monkeypatch) -> list:
    started = []
    real_spawn = process.Judge._spawn

    def counted(self, *args):
        started.append(self)
        return real_spawn(self, *args)

    monkeypatch.setattr(process.Judge, "_spawn", counted)
    return started


def _crash_and_wait(tree: list[int]) -> None:
    """SIGSEGV to the judge's process tree, returning once every member has ended. A pid 1 of a namespace ignores
    a signal from outside it that it has no handler for: the forked judge dies of the signal and its pid 1 follows
    by its parent-death signal, a moment later. Sent without the wait, the graph could reach the judge's pid 1 in
    that moment and be answered (CI, stop 50: one run in twelve under load)."""
    handles = [os.pidfd_open(member) for member in tree]  # the judge, and the pid 1 of its namespace
    try:
        for member in tree:
            os.kill(member, signal.SIGSEGV)
        for handle in handles:  # a pidfd is readable once its process has ended
            assert select.select([handle], [], [], 30)[0], "the judge outlived SIGSEGV for 30 s"
    finally:
        for handle in handles:
            os.close(handle)


def test_a_judge_that_dies_mid_graph_costs_that_part_only_and_the_next_hand_in_gets_a_fresh_one(
        monkeypatch, judges_started):
    real_send = process.Judge._send
    crashed = []

    def crash_on_part_1(self, probe, message, seconds):
        if probe == "sdpa" and not crashed:
            crashed.append(self.process.pid)
            _crash_and_wait(_process_tree(self.process.pid))
        return real_send(self, probe, message, seconds)

    monkeypatch.setattr(process.Judge, "_send", crash_on_part_1)
    report = grade_submission(HONEST)
    assert crashed and len(judges_started) == 2  # Part 2's graphs in a fresh judge
    failed = [check for check in report["checks"] if "submission-too-costly" in check["mistakes"]]
    assert failed and {check["part"] for check in failed} == {"sdpa"}
    assert all("判定进程" in check["message_zh"] and "the grader's judge" in check["message_en"]
               and "signal 11" in check["message_en"] for check in failed), failed[0]["message_en"]
    assert points(report, "sdpa") < PART_POINTS["sdpa"] and points(report, "mha") == PART_POINTS["mha"]

    monkeypatch.setattr(process.Judge, "_send", real_send)
    next_report = grade_submission(HONEST)
    assert next_report["score"] == sum(PART_POINTS.values()) and len(judges_started) == 3  # one judge a grading


def _graph(nodes: list) -> dict:
    text = json.dumps({"format": 1, "inputs": 3, "nodes": nodes}).encode()
    fact = {"kind": "tensor", "requires_grad": False, "subclass": False}
    return {"graph": torch.frombuffer(bytearray(text), dtype=torch.uint8), "constants": [],
            "structure": {"kind": "tuple", "length": 2}, "outputs": [fact, fact]}


def _sdpa_fields() -> dict:
    Q, K, V = (torch.randn(2, 3, 5, 8, generator=torch.Generator().manual_seed(seed)) for seed in range(3))
    return checked(Probe.SDPA, SdpaRequest(Q=Q, K=K, V=V, is_causal=True))


def test_a_graph_over_the_judges_cpu_budget_costs_its_part_and_the_judge_is_ended():
    # a thousand products of 512 x 512 matrices, each small, several seconds in all: over a one-second budget
    nodes = [["input", 0], ["input", 1], ["input", 2], ["call", "aten.ones.default", [[512, 512]], {"kwargs": {}}]]
    for _ in range(1000):
        nodes.append(["call", "aten.mm.default", [{"n": len(nodes) - 1}, {"n": 3}], {"kwargs": {}}])
    nodes.append(["output", [{"n": len(nodes) - 1}, {"n": len(nodes) - 1}]])
    judge = process.Judge(default_limits(), False, cpu_seconds=1)
    try:
        with pytest.raises(process.JudgeFailure) as ended:
            judge.judge("sdpa", _graph(nodes), _sdpa_fields())
        assert ended.value.kind == "submission-too-costly" and not judge.alive
    finally:
        judge.close()


def test_one_judge_answers_many_graphs_and_a_graph_is_sent_to_it_once():
    nodes = [["input", 0], ["input", 1], ["input", 2],
             ["call", "aten.softmax.int", [{"n": 0}, -1], {"kwargs": {}}], ["output", [{"n": 3}, {"n": 3}]]]
    traced, sent = _graph(nodes), []
    judge = process.Judge(default_limits(), False)
    real_send = judge._send
    judge._send = lambda probe, message, seconds: (sent.append(["traced" in run for run in message["runs"]])
                                                   or real_send(probe, message, seconds))
    try:
        for _ in range(3):
            fields = _sdpa_fields()
            reply = judge.judge("sdpa", traced, fields)
            assert torch.allclose(reply["answer"]["out"]["value"], torch.softmax(fields["Q"], -1))
        assert sent == [[True], [False], [False]] and judge.alive
    finally:
        judge.close()


def test_the_judge_never_waits_past_what_the_submission_has_left(monkeypatch):
    # 10 s probes with 3 s left of the submission at every call: no wait for a graph's reply may be a whole probe's
    left, waits = 3.0, []
    real_receive = process.Judge._receive

    def timed(self, seconds):
        if self._missing is not None:  # a graph's reply, not the judge's own set-up frame
            waits.append(seconds)
        return real_receive(self, seconds)

    monkeypatch.setattr(process.Judge, "_receive", timed)
    monkeypatch.setattr(StudentCode, "_remaining", lambda self: left)  # the clock, not the wall, decides here
    grade_submission(HONEST, limits=dataclasses.replace(default_limits(), probe_seconds=10.0))
    assert waits and all(seconds <= left for seconds in waits), waits
