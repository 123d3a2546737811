"""The parent's budget per submission: the CPU time and memory this trusted process spends on one hand-in.

The caps (grader.handin.source) bound what is read and every pass over it is linear, so an honest hand-in costs
the parent about a second; the budget is the wall behind them, for a pass that is slower than it should
be. A submission is charged from the moment its reading starts (`charged`) to the end of its report,
fixes included: the CPU clock of the thread grading it (grade-all grades one submission at a time per job, and
torch runs single-threaded there) and the growth of this process's resident memory. The passes call
`check()` between steps and once per statement; a hand-in over the budget is refused like one over a
cap: 0 points and a row that says so (`submission-too-costly`), as a timeout does. The graphs the parent runs
are also charged their work before each node runs (`spend_operations`), so one node cannot outrun the clock.

Memory is the process's (each of `grade-all --jobs N`'s jobs is a process of its own, one submission at a time);
the budget is far above what the capped passes take (a few hundred MiB at worst), so only a pass gone wrong trips it.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

CPU_SECONDS = 30.0
"""Parent CPU per submission: an honest one takes about 1 s (reading, rules, verdicts, fixes)."""
MEMORY_BYTES = 2 << 30
"""Growth of the parent's resident memory per submission: an honest one adds a few MiB."""
OPERATIONS = 4e11
"""Work the graphs of one submission may cost the parent, in float32 multiply-adds (grader.graph.bounds.cost),
charged before each node runs: about ten seconds of one core; an honest grading costs under a thousandth of it."""
MISTAKE = "submission-too-costly"

_PAGE = os.sysconf("SC_PAGE_SIZE")
_current = threading.local()


def resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE


class OverBudget(Exception):
    """What was over, in both languages; grader.handin.source and grader.grade turn it into a refusal."""

    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.mistake, self.zh, self.en = MISTAKE, zh, en


@dataclass
class ParentBudget:
    cpu_seconds: float = field(default_factory=lambda: CPU_SECONDS)
    memory_bytes: int = field(default_factory=lambda: MEMORY_BYTES)
    operations: float = field(default_factory=lambda: OPERATIONS)
    started_cpu: float = 0.0
    started_memory: int = 0
    spent_operations: float = 0.0

    def start(self) -> None:
        self.started_cpu, self.started_memory = time.thread_time(), resident_bytes()

    def spend(self, operations: float) -> None:
        self.spent_operations += operations
        if self.spent_operations > self.operations:
            raise OverBudget(f"评判这份代码的计算图需要超过 {self.operations:.0e} 次乘加运算，超过了评分程序的上限",
                             f"judging this code's graphs would take the grader over its limit of "
                             f"{self.operations:.0e} multiply-adds")

    def over(self) -> OverBudget | None:
        spent = time.thread_time() - self.started_cpu
        if spent > self.cpu_seconds:
            return OverBudget(f"读取和评判这份代码用掉的评分程序 CPU 时间超过了上限 {self.cpu_seconds:g} 秒",
                           f"reading and judging this code took the grader over its limit of {self.cpu_seconds:g} s "
                           "of CPU time")
        grown = resident_bytes() - self.started_memory
        if grown > self.memory_bytes:
            return OverBudget(f"读取这份代码让评分程序多用了 {grown // 2**20} MiB 内存，超过上限 "
                                    f"{self.memory_bytes // 2**20} MiB",
                           f"reading this code took the grader {grown // 2**20} MiB of memory, over its limit of "
                           f"{self.memory_bytes // 2**20} MiB")
        return None


@contextlib.contextmanager
def charged(budget: ParentBudget | None = None) -> Iterator[ParentBudget]:
    """Charge this thread's work to a submission's budget until the block ends; inside a block that already
    charges one (reading, then grading, the same hand-in), the outer budget holds."""
    active = getattr(_current, "budget", None)
    if active is not None:
        yield active
        return
    budget = budget or ParentBudget()
    budget.start()
    _current.budget = budget
    try:
        yield budget
    finally:
        _current.budget = None


def check() -> None:
    """Raise OverBudget when the submission being graded in this thread has spent its budget (none: no-op)."""
    budget = getattr(_current, "budget", None)
    if budget is not None:
        over = budget.over()
        if over is not None:
            raise over


def spend_operations(operations: float) -> None:
    """Charge work about to be done to the submission being graded in this thread; raise OverBudget, before the
    work is done, when it would take the submission over its budget of operations (none charged: no-op)."""
    budget = getattr(_current, "budget", None)
    if budget is not None:
        budget.spend(operations)
