"""Sharding and the job pool: which students this run grades, and grading them `--jobs` at a time.

With several jobs, each is a process forked from this one that grades one item at a time; the run only hands
out items and collects rows. A job process that dies (the kernel's out-of-memory kill, a crash the judge did not
contain) takes only the item it was grading: that item is graded again in a fresh job process, never in this
one, and an item that ends its job process a second time gets the row `killed(item)` says instead of a third try.
"""
from __future__ import annotations

import collections
import ctypes
import hashlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

from tqdm import tqdm

from grader.process import single_threaded_torch

PR_SET_PDEATHSIG = 1
KILLS_BEFORE_GIVING_UP = 2
"""How often one item may end a job process before it is reported instead of graded again."""

_work: Callable | None = None
"""The work of the job processes, which they inherit when forked (a closure does not pickle)."""


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Stable across machines and runs: the same student always falls in the same share."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


def _job_main(connection, index: int, jobs: int, run: int, others: list) -> None:
    """One job process: grade the items it is sent, one at a time, until it is sent None. It dies with the run
    (`run` is the run's pid), and holds none of the run's ends of the other jobs' pipes (`others`), so that a run
    that ends leaves no job waiting on them."""
    from grader.sandbox.worker_process import in_a_job_process  # Linux only, as grading is

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != run:  # the run ended before the line above
        os._exit(1)
    for other in others:
        other.close()
    single_threaded_torch()
    in_a_job_process(index, jobs)
    while True:
        try:
            item = connection.recv()
        except EOFError:  # the run ended without telling it
            return
        if item is None:
            return
        connection.send(_work(item))


class _Job:
    def __init__(self, context, index: int, jobs: int, others: list["_Job"]) -> None:
        self.index = index
        self.connection, child_end = context.Pipe(duplex=True)
        # not a daemon: its gradings start workers and a judge; it ends when told, or with the run
        self.process = context.Process(target=_job_main, args=(child_end, index, jobs, os.getpid(),
                                                               [other.connection for other in others]))
        self.process.start()
        child_end.close()
        self.task: tuple[int, object, int] | None = None  # (position, item, kills so far)

    def stop(self, wait: bool) -> None:
        if wait and self.process.is_alive():
            try:
                self.connection.send(None)
            except OSError:
                pass
            self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.connection.close()


def _bar(total: int, unit: str, progress: bool):
    return tqdm(total=total, unit=unit, desc="grading", file=sys.stderr, dynamic_ncols=True) if progress else None


def _in_job_processes(work: Callable, items: Iterable, jobs: int, start_bar: Callable[[], tqdm | None],
                      killed: Callable[[object], object]) -> list:
    """work(item) for every item in `jobs` forked job processes; results in the items' order."""
    global _work
    _work = work
    context = multiprocessing.get_context("fork")
    pending: collections.deque = collections.deque()  # (position, item, kills): items waiting for a job
    results: dict[int, object] = {}
    source, exhausted, count = iter(items), False, 0
    pool: list[_Job] = []
    for index in range(jobs):
        pool.append(_Job(context, index, jobs, pool))
    bar = start_bar()  # after the first forks: the bar starts a thread
    try:
        while True:
            if not exhausted and len(pending) < jobs:  # read ahead: `items` may work in this thread (sanitizing)
                try:
                    pending.append((count, next(source), 0))
                    count += 1
                except StopIteration:
                    exhausted = True
            for job in pool:
                if job.task is None and pending:
                    job.task = pending.popleft()
                    job.connection.send(job.task[1])
            busy = [job for job in pool if job.task is not None]
            if not busy:
                if exhausted and not pending:
                    break
                continue
            reading_ahead = not exhausted and len(pending) < jobs
            ready = multiprocessing.connection.wait([job.connection for job in busy]
                                                    + [job.process.sentinel for job in busy],
                                                    timeout=0 if reading_ahead else None)
            for job in busy:
                if job.connection not in ready and job.process.sentinel not in ready:
                    continue
                position, item, kills = job.task
                job.task = None
                try:
                    results[position] = job.connection.recv()
                except (EOFError, OSError):  # the job process died with this item: a fresh one takes its place
                    job.stop(wait=False)
                    others = [other for other in pool if other is not job]
                    pool[pool.index(job)] = _Job(context, job.index, jobs, others)
                    if kills + 1 < KILLS_BEFORE_GIVING_UP:
                        pending.appendleft((position, item, kills + 1))
                        continue
                    results[position] = killed(item)
                if bar is not None:
                    bar.update(1)
    except BaseException:  # Ctrl-C: end the jobs (their workers end with their probes' limits)
        for job in pool:
            job.stop(wait=False)
        raise
    finally:
        if bar is not None:
            bar.close()
    for job in pool:
        job.stop(wait=True)
    return [results[position] for position in range(count)]


def in_parallel(work: Callable, items: Iterable, total: int, jobs: int, progress: bool, unit: str,
                killed: Callable[[object], object] = lambda item: None) -> list:
    """work(item) for every item, `jobs` at a time; results in the items' order (never the order
    they finish in). `items` may be a generator doing work of its own (nbgrader's sanitize pass)
    in this thread while earlier items are graded. Each job runs torch single-threaded
    (grader.process.single_threaded_torch: OpenMP keeps the setting per thread). Several jobs are forked
    processes, items and results going between them as pickles (processes, not threads: the parent's own half of
    grading is Python, and two threads took 0.66 x the time of one where two processes take about half,
    benchmarks/RESULTS.md); `killed(item)` is the result of an item that ended two job processes. One job is a
    thread of this process."""
    if jobs > 1:
        return _in_job_processes(work, items, jobs, lambda: _bar(total, unit, progress), killed)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grade-all", initializer=single_threaded_torch)
    bar = _bar(total, unit, progress)
    try:
        futures = []
        for item in items:
            futures.append(pool.submit(work, item))
            if bar is not None:
                futures[-1].add_done_callback(lambda _: bar.update(1))
        results = [future.result() for future in futures]
    except BaseException:  # Ctrl-C: drop what has not started
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown()
    return results
