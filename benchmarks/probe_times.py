"""How long one probe call takes, at most, on the test fixtures: the margin under a per-call limit.

The test session gives a probe call 3 s (`SESSION_PROBE_SECONDS` in tests/conftest.py, through
ATTENTION_KIT_PROBE_SECONDS) instead of the product's 10 s, so its timeout fixtures wait less. That is
safe while every honest and mutant call ends well inside it. The 3 GiB memory bomb is timed too: under
the session's limits it may end in `memory-limit` or `timeout`, and the tests that name its
`memory-limit` grade it with 512 MiB. This grades the correct styles, the mutants and
the memory bomb (not the endless loops), timing every probe call and every worker start in this
process, and prints the slowest of each kind with the load average. Run it while the machine is busy
(during `make test`, say) to see the margin at load.

    .venv/bin/python benchmarks/probe_times.py [--top 5]
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from grader.grade import grade_submission
from grader.process import single_threaded_torch
from grader.sandbox import worker_process

SUBMISSIONS = Path(__file__).resolve().parent.parent / "tests" / "submissions"
LIMIT_FIXTURES = ("timeout", "infinite_loop")  # they run until the limit: their calls measure the limit itself


def fixtures() -> dict[str, list[Path]]:
    return {"correct": sorted((SUBMISSIONS / "correct").glob("*.py")),
            "mutants": sorted(p for p in (SUBMISSIONS / "mutants").glob("*.py")
                              if not p.stem.startswith(LIMIT_FIXTURES)),
            "memory bomb": [SUBMISSIONS / "hostile" / "memory_bomb.py"]}


def timed_calls(paths: list[Path]) -> list[tuple[float, str, str]]:
    """(seconds, probe or 'start', file) for every call and worker start while grading `paths`."""
    seen, current = [], [""]
    call, start = worker_process.Worker.call, worker_process.Worker.__init__

    def timed_call(self, probe, fields, seconds):
        began = time.monotonic()
        try:
            return call(self, probe, fields, seconds)
        finally:
            seen.append((time.monotonic() - began, probe, current[0]))

    def timed_start(self, *args, **kwargs):
        began = time.monotonic()
        try:
            return start(self, *args, **kwargs)
        finally:
            seen.append((time.monotonic() - began, "start", current[0]))

    worker_process.Worker.call, worker_process.Worker.__init__ = timed_call, timed_start
    try:
        for path in paths:
            current[0] = path.name
            grade_submission(path)
    finally:
        worker_process.Worker.call, worker_process.Worker.__init__ = call, start
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="the slowest calls shown per kind")
    args = parser.parse_args()
    single_threaded_torch()
    grade_submission(SUBMISSIONS / "correct" / "finfo_min_masked_fill.py")  # the fork server, started untimed
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for kind, paths in fixtures().items():
        seen = timed_calls(paths)
        calls = sorted((c for c in seen if c[1] != "start"), reverse=True)
        starts = sorted((c for c in seen if c[1] == "start"), reverse=True)
        print(f"\n{kind}: {len(paths)} files, {len(calls)} probe calls, {len(starts)} worker starts")
        for seconds, probe, name in calls[:args.top]:
            print(f"  call   {seconds:6.2f} s  {probe:<14} {name}")
        for seconds, _, name in starts[:2]:
            print(f"  start  {seconds:6.2f} s  {'':<14} {name}")
    print(f"\nload average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
