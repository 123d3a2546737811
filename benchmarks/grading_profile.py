"""Where one grading's cost goes: round trips to the worker and to the judge, stand-in traces, CPU per party.

Grades each named hand-in once in this process (the report cache off, the fix search included, as `grade` runs
it) and counts, per grading:
- worker round trips (one request, one answer each), by probe, and how many of them ran on a stand-in device
  (`meta`, `fake-cuda`: the traces that only the device checks need);
- graphed probe calls the parent answered from an answer the worker had already given to the same message
  (`StudentCode._worker_answer`'s reuse: no round trip);
- judge round trips (one request, its replies read as they come) and the graph runs they carry (each one worker
  answer's graph on one request's own inputs);
- CPU seconds of the parent (this process), of every worker and of every judge with the processes under each
  (the pid 1 of its namespace that runs the code), read from /proc just before each is ended; the fork server's
  start is left out (it is paid once per command).

    .venv/bin/python benchmarks/grading_profile.py                                  # the solution
    .venv/bin/python benchmarks/grading_profile.py tests/submissions/mutants/mask-diagonal.py --no-fixes
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.sandbox.worker_process import start_fork_server  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return sum(int(field) for field in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
    except OSError:
        return 0.0


class Tally:
    def __init__(self) -> None:
        self.worker_calls: Counter = Counter()
        self.stand_in_calls: Counter = Counter()
        self.judge_calls: Counter = Counter()
        self.judge_runs: Counter = Counter()
        self.reused = 0
        self.cpu = Counter()
        self.processes = Counter()


def instrumented(tally: Tally):
    """Wrap the worker's and the judge's calls and ends so that each is counted; returns the undo."""
    from grader.checks import student_code
    from grader.graph.devices import STAND_INS
    from grader.judge.process import Judge
    from grader.sandbox.worker_process import Worker, _process_tree

    original_call, original_close, original_answer = Worker.call, Worker.close, student_code.StudentCode._worker_answer
    original_judge_many = Judge.judge_many
    measured: set[int] = set()

    def call(self, probe, fields, seconds, *args, **options):
        tally.worker_calls[probe] += 1
        if fields.get("device") in STAND_INS:
            tally.stand_in_calls[probe] += 1
        return original_call(self, probe, fields, seconds, *args, **options)

    def judge_many(self, probe, runs, **options):
        tally.judge_calls[probe] += 1
        tally.judge_runs[probe] += len(runs)
        return original_judge_many(self, probe, runs, **options)

    def close(self):
        process = getattr(self, "process", None)
        if process is not None and process.pid not in measured and process.is_alive():
            measured.add(process.pid)
            party = "judge" if isinstance(self, Judge) else "worker"
            tally.cpu[party] += sum(cpu_seconds(pid) for pid in _process_tree(process.pid))
            tally.processes[party] += 1
        return original_close(self)

    def worker_answer(self, probe, fields, seconds, *args, **options):
        sent = student_code.message_fields(probe, fields)
        key = student_code._message_key(probe, sent) if probe in student_code.GRAPHED else None
        if key is not None and key in self._answered:
            tally.reused += 1
        return original_answer(self, probe, fields, seconds, *args, **options)

    Worker.call, Worker.close, student_code.StudentCode._worker_answer = call, close, worker_answer
    Judge.judge_many = judge_many

    def undo():
        Worker.call, Worker.close, Judge.judge_many = original_call, original_close, original_judge_many
        student_code.StudentCode._worker_answer = original_answer

    return undo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[str(ROOT / "solutions" / "attention" / "attention.py")])
    parser.add_argument("--no-fixes", action="store_true", help="the checks alone, without the fix search")
    args = parser.parse_args()
    start_fork_server()
    from grader import grade as grading
    from grader.handin.source import load_submission
    from grader.process import single_threaded_torch

    single_threaded_torch()
    for path in args.paths:
        tally = Tally()
        undo = instrumented(tally)
        submission = load_submission(Path(path))
        started_wall, started_cpu = time.perf_counter(), time.process_time()
        try:
            if args.no_fixes:
                report = grading._run_checks(submission, grading.checks_for(exercise=submission.exercise),
                                             grading.default_limits(), False)
            else:
                report = grading.grade(submission, cuda=False)
        finally:
            undo()
        wall, parent_cpu = time.perf_counter() - started_wall, time.process_time() - started_cpu
        workers, judges = sum(tally.worker_calls.values()), sum(tally.judge_calls.values())
        print(f"{Path(path).name}: score {report['score']}/{report['max_score']}, wall {wall:.1f} s, "
              f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"  worker round trips {workers} ({', '.join(f'{k} {v}' for k, v in sorted(tally.worker_calls.items()))})"
              f", of them on a stand-in {sum(tally.stand_in_calls.values())}"
              f" ({', '.join(f'{k} {v}' for k, v in sorted(tally.stand_in_calls.items()))});"
              f" graphed calls answered from an earlier answer {tally.reused}")
        print(f"  judge round trips {judges} ({', '.join(f'{k} {v}' for k, v in sorted(tally.judge_calls.items()))}) "
              f"running {sum(tally.judge_runs.values())} graphs")
        print(f"  CPU s: parent {parent_cpu:.2f}, workers {tally.cpu['worker']:.2f} ({tally.processes['worker']} "
              f"processes), judges {tally.cpu['judge']:.2f} ({tally.processes['judge']} processes)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
