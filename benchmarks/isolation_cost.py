"""What isolation costs per submission, measured side by side in one run.

Grades the reference solution N times with the full confinement (namespaces, new root, uid
drop, limits) and N times with confinement switched off, alternating, in the same process (the
fork server is shared, so neither pays torch's import), and prints per-submission times and
the ratio. Also times the bare worker start (fork + confine + load) both ways, and what a
sandbox that starts a new process per submission (bubblewrap, nsjail) costs before any grading:
a fresh interpreter importing torch, plain and inside `bwrap` when it is installed.

    .venv/bin/python benchmarks/isolation_cost.py [--runs 10]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from grader.sandbox.confinement import Limits
from grader.grade import default_limits, grade_submission
from grader.sandbox.worker_process import Worker
from grader.handin.source import load_submission

REFERENCE = Path(__file__).resolve().parent.parent / "solutions" / "attention" / "attention.py"


def limits(confined: bool) -> Limits:
    return Limits(**{**default_limits().__dict__, "confine": confined})


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


IMPORT_TORCH = [sys.executable, "-c", "import torch"]
BWRAP = ["--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev",
         "--proc", "/proc", "--tmpfs", "/tmp"]


def interpreter_per_submission(runs: int) -> dict[str, list[float]]:
    """Seconds to start what an exec-based sandbox would start per submission (torch imported)."""
    commands = {"new interpreter + torch": IMPORT_TORCH}
    if shutil.which("bwrap"):
        commands["bwrap + interpreter + torch"] = ["bwrap", *BWRAP, *IMPORT_TORCH]
    return {label: [timed(lambda: subprocess.run(command, check=True)) for _ in range(runs)]
            for label, command in commands.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    source = load_submission(REFERENCE).source
    grade_submission(REFERENCE, limits=limits(True))  # start the fork server, warm the caches
    start = {True: [], False: []}
    whole = {True: [], False: []}
    for _ in range(runs):
        for confined in (True, False):
            start[confined].append(timed(lambda: Worker(source, limits(confined), False).close()))
            report = {}
            whole[confined].append(timed(lambda: report.update(grade_submission(REFERENCE, limits=limits(confined)))))
            assert report["score"] == 20.0, report
    print(f"reference solution, {runs} runs each, median seconds")
    print(f"{'':28}{'confined':>10}{'unconfined':>12}{'ratio':>8}")
    for label, data in (("worker start (fork+load)", start), ("whole grading", whole)):
        a, b = statistics.median(data[True]), statistics.median(data[False])
        print(f"{label:28}{a:10.3f}{b:12.3f}{a / b:8.2f}")
    cost = statistics.median(whole[True]) - statistics.median(whole[False])
    print(f"isolation cost per submission: {cost * 1000:.0f} ms")
    print("a process per submission instead of a fork (what bwrap/nsjail need), before any grading:")
    for label, data in interpreter_per_submission(min(runs, 5)).items():
        print(f"{label:28}{statistics.median(data):10.3f}")


if __name__ == "__main__":
    main()
