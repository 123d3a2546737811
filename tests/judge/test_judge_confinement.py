"""Is the judge confined: no network, no file of the kit's, no memory or CPU time past its limits?

The judge runs hostile graphs, so what a graph could make it do must fail there. Each test forks a child of this
process, confines it as the judge confines itself (`grader.judge.serve.set_up`: the worker's layers, then the
judge's own), and tries what a graph that escaped the runner would: open a socket, read the kit's README, allocate
past the address-space limit, compute past the CPU-time limit. The limits are written out here (README,
*Isolation*), not read from the code.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import time

import pytest

from support.capabilities import lacking
from support.paths import ROOT
from grader.grade import default_limits
from grader.judge import serve
from grader.judge.process import Judge
from grader.sandbox.confinement import Limits

pytestmark = pytest.mark.sandbox

MEMORY_BYTES = 256 << 20  # the judge's address space on top of what it maps at start, in these tests
CPU_SECONDS = 1  # the grading's CPU budget in these tests; RLIMIT_CPU is 2 s above it (SIGXCPU at 3 s)


def _try_socket() -> str:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError as error:
        return f"refused: {type(error).__name__}"
    return "created"


def _try_the_kits_files() -> str:
    try:
        with open(ROOT / "README.md", "rb") as readme:
            readme.read(1)
    except OSError as error:
        return f"refused: {type(error).__name__}"
    return "read"


def _try_memory() -> str:
    try:
        block = bytearray(1 << 30)
    except MemoryError:
        return "refused: MemoryError"
    return f"allocated {len(block) >> 20} MiB"


def _where_it_stands() -> dict:
    return {"cwd": os.getcwd(), "files": sorted(os.listdir(".")), "descriptors": len(os.listdir("/proc/self/fd"))}


def _spin() -> str:
    while True:
        pass


ACTIONS = {"socket": _try_socket, "files": _try_the_kits_files, "memory": _try_memory, "place": _where_it_stands,
           "cpu": _spin}


def in_a_confined_judge(action: str, seconds: float = 60.0) -> tuple[object, int | None]:
    """(what `action` saw, the signal that ended the child or None) in a child confined as the judge is."""
    if os.geteuid() != 0:
        lacking("root", "the judge's namespaces and its uid")
    limits = Limits(**{**default_limits().__dict__, "memory_bytes": MEMORY_BYTES})
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        try:
            os.close(read_end)
            serve.set_up(write_end, limits, False, CPU_SECONDS)
            os.write(write_end, json.dumps(ACTIONS[action]()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    received, deadline = b"", time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if select.select([read_end], [], [], 0.2)[0]:
                chunk = os.read(read_end, 1 << 16)
                if not chunk:
                    break
                received += chunk
        else:
            os.kill(child, signal.SIGKILL)
    finally:
        os.close(read_end)
        _, status = os.waitpid(child, 0)
    return (json.loads(received) if received else None), (os.WTERMSIG(status) if os.WIFSIGNALED(status) else None)


def test_a_graph_in_the_judge_cannot_open_a_socket():
    assert in_a_confined_judge("socket")[0] == "refused: PermissionError"


def test_a_graph_in_the_judge_cannot_read_the_kits_files():
    assert in_a_confined_judge("files")[0] == "refused: FileNotFoundError"


def test_a_graph_in_the_judge_cannot_allocate_past_its_memory_limit():
    assert in_a_confined_judge("memory")[0] == "refused: MemoryError"


def test_the_judge_works_in_an_empty_folder_with_no_descriptor_but_its_pipe():
    seen = in_a_confined_judge("place")[0]
    assert seen["cwd"] == "/tmp/work" and seen["files"] == []
    assert seen["descriptors"] == 5  # 0, 1 and 2 on /dev/null, the pipe, and the one listing /proc/self/fd


def test_a_graph_that_keeps_the_judge_computing_is_ended_by_its_cpu_limit():
    started = time.monotonic()
    seen, ended_by = in_a_confined_judge("cpu", seconds=30.0)
    assert seen is None and ended_by in (signal.SIGXCPU, signal.SIGKILL), ended_by
    assert time.monotonic() - started < 30.0


def test_the_judge_of_a_grading_reports_no_missing_layer_as_root():
    if os.geteuid() != 0:
        lacking("root", "every layer of the judge")
    judge = Judge(default_limits(), False)
    try:
        assert judge.missing_isolation == []
    finally:
        judge.close()


def test_the_judges_layers_are_switched_off_only_by_name():
    with pytest.raises(ValueError):
        Judge(default_limits(), False, judge_layers_off=frozenset({"no-socket"}))  # misspelt: would stay on
