"""grade-all's jobs: several are processes forked from the command (Python's interpreter lock makes threads take
turns at the parent's half of grading), results come back in the items' order, a job the kernel kills loses no
row (its item is graded again in a fresh job process, never in the command's own; an item that ends two job
processes gets the row the caller gives for it, and no third try), each job hands its workers uids from its own
share of the band, and every job forks its workers from the command's one fork server instead of importing torch
into a second one.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from support.paths import ROOT
from grader.grade_all.parallel import in_parallel
from grader.sandbox import worker_identity

pytestmark = pytest.mark.unit


def where_it_ran(item: int) -> tuple[int, int]:
    return item, os.getpid()


def test_two_jobs_are_two_processes_of_their_own_and_keep_the_items_order():
    results = in_parallel(where_it_ran, iter(range(12)), 12, jobs=2, progress=False, unit="item")
    assert [item for item, _ in results] == list(range(12))
    pids = {pid for _, pid in results}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_one_job_runs_in_this_process():
    results = in_parallel(where_it_ran, iter(range(3)), 3, jobs=1, progress=False, unit="item")
    assert results == [(0, os.getpid()), (1, os.getpid()), (2, os.getpid())]


def test_a_job_the_kernel_kills_loses_no_row_and_its_item_is_graded_again_in_a_fresh_job(tmp_path):
    parent = os.getpid()
    first_try = tmp_path / "item 2 was tried"

    def dies_once_in_a_job(item: int) -> tuple[int, int]:
        if item == 2 and not first_try.exists():
            first_try.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
        return item, os.getpid()

    results = in_parallel(dies_once_in_a_job, iter(range(6)), 6, jobs=2, progress=False, unit="item")
    assert [item for item, _ in results] == list(range(6))
    assert dict(results)[2] not in (parent, int(first_try.read_text()))  # a fresh job process, not the command


ENDS_EVERY_PROCESS = """
import json, os, signal, sys
from grader.grade_all.parallel import in_parallel

def crashes_on_item_2(item):
    if item == 2:
        with open(sys.argv[1], "a") as tries:
            tries.write("try ")
        os.kill(os.getpid(), signal.SIGSEGV)  # as a graph that crashes whatever runs it would
    return item

print(json.dumps(in_parallel(crashes_on_item_2, iter(range(5)), 5, jobs=2, progress=False, unit="item",
                             killed=lambda item: f"item {item} ended two job processes")))
"""


def test_an_item_that_ends_two_job_processes_gets_its_row_and_no_third_try(tmp_path):
    # in a process of its own: grading the item again in the command itself would end it, with no row at all
    tries = tmp_path / "tries"
    done = subprocess.run([sys.executable, "-c", ENDS_EVERY_PROCESS, str(tries)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == [0, 1, "item 2 ended two job processes", 3, 4]
    assert tries.read_text().count("try") == 2


def shares_seen(_: int) -> tuple[int, int]:
    return worker_identity._share


def test_each_job_takes_its_own_share_of_the_worker_uids():
    shares = set(in_parallel(shares_seen, iter(range(8)), 8, jobs=2, progress=False, unit="item"))
    assert shares <= {(0, 2), (1, 2)} and shares  # one of two shares per job, never the whole band


def test_a_share_hands_out_only_its_own_uids(monkeypatch):
    monkeypatch.setattr(worker_identity, "BAND", range(70600, 70610))
    monkeypatch.setattr(worker_identity, "_taken", set())
    monkeypatch.setattr(worker_identity, "_ids_of_live_processes", lambda: set())
    monkeypatch.setattr(worker_identity, "_has_an_account", lambda uid: False)
    monkeypatch.setattr(worker_identity, "_subordinate_ranges", lambda: [])
    handed = {}
    for index in (0, 1):
        monkeypatch.setattr(worker_identity, "_share", (index, 2))
        handed[index] = {worker_identity.allocate() for _ in range(5)}
    assert handed[0] == {70600, 70602, 70604, 70606, 70608}
    assert handed[1] == {70601, 70603, 70605, 70607, 70609}
    with pytest.raises(OSError):
        worker_identity.allocate()  # share 1's five are taken: none of share 0's is handed out instead
    with pytest.raises(ValueError):
        worker_identity.take_share(2, 2)


SHARED_SERVER = """
import multiprocessing, multiprocessing.forkserver, os
from grader.grade_all.parallel import in_parallel

def seen(_):
    server = multiprocessing.forkserver._forkserver
    server.ensure_running()  # what a worker's start calls first
    return server._forkserver_pid

multiprocessing.get_context("forkserver").set_forkserver_preload([])  # no torch: only which server answers matters
multiprocessing.forkserver.ensure_running()
ours = multiprocessing.forkserver._forkserver._forkserver_pid
print(sorted(set(in_parallel(seen, iter(range(6)), 6, jobs=2, progress=False, unit="item"))) == [ours])
"""


def test_every_job_forks_its_workers_from_the_commands_fork_server():
    # in a process of its own: a fork server started here would serve this test session's later gradings
    done = subprocess.run([sys.executable, "-c", SHARED_SERVER], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "True"
