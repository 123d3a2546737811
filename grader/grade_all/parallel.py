"""Sharding and the job pool: which students this run grades, and grading them `--jobs` at a time."""
from __future__ import annotations

import hashlib
import multiprocessing
import sys
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable

from tqdm import tqdm

from grader.process import single_threaded_torch

_work: Callable | None = None
"""The work of a pool of job processes, which they inherit when forked (a closure does not pickle)."""


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Stable across machines and runs: the same student always falls in the same share."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


def _job_started(turns, jobs: int) -> None:
    from grader.sandbox.worker_process import in_a_job_process  # Linux only, as grading is

    single_threaded_torch()
    with turns.get_lock():
        index = turns.value
        turns.value += 1
    in_a_job_process(index, jobs)


def _job(item):
    return _work(item)


def _result(work: Callable, item, future: Future):
    """A job process the kernel killed (out of memory, say) takes the items it had with it: those are graded
    again here, one by one, so every item still gets its row."""
    try:
        return future.result()
    except BrokenProcessPool:
        return work(item)


def _pool(work: Callable, jobs: int) -> tuple[Executor, Callable[[object], Future]]:
    """More than one job: each a process forked from this one. Threads would share one interpreter lock, and the
    parent's own half of grading (the verdicts, the graphs it runs) is Python: two threads took 0.66 x the time of
    one where two processes take about half (benchmarks/RESULTS.md)."""
    global _work
    if jobs > 1:
        _work = work
        context = multiprocessing.get_context("fork")
        pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_job_started,
                                   initargs=(context.Value("i", 0), jobs))
        return pool, lambda item: pool.submit(_job, item)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="grade-all", initializer=single_threaded_torch)
    return pool, lambda item: pool.submit(work, item)


def in_parallel(work: Callable, items: Iterable, total: int, jobs: int, progress: bool, unit: str) -> list:
    """work(item) for every item, `jobs` at a time; results in the items' order (never the order
    they finish in). `items` may be a generator doing work of its own (nbgrader's sanitize pass)
    in this thread while earlier items are graded. Each job runs torch single-threaded
    (grader.process.single_threaded_torch: OpenMP keeps the setting per thread). Several jobs are forked
    processes, items and results going between them as pickles; one job is a thread of this process."""
    pool, submit = _pool(work, jobs)
    bar = None
    futures: list[tuple[object, Future]] = []
    try:
        for item in items:
            future = submit(item)  # the first submit forks the job processes: before the bar starts a thread
            if bar is None and progress:
                bar = tqdm(total=total, unit=unit, desc="grading", file=sys.stderr, dynamic_ncols=True)
            if bar is not None:
                future.add_done_callback(lambda _: bar.update(1))
            futures.append((item, future))
        results = [_result(work, item, future) for item, future in futures]
    except BaseException:  # Ctrl-C: drop what has not started (running workers end with their probes' limits)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown()
    return results
