"""Sharding and the thread pool: which students this run grades, and grading them `--jobs` at a time."""
from __future__ import annotations

import hashlib
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterable

from tqdm import tqdm

from grader.process import single_threaded_torch


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Stable across machines and runs: the same student always falls in the same share."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


def in_parallel(work: Callable, items: Iterable, total: int, jobs: int, progress: bool, unit: str) -> list:
    """work(item) for every item, `jobs` at a time; results in the items' order (never the order
    they finish in). `items` may be a generator doing work of its own (nbgrader's sanitize pass)
    in this thread while earlier items are graded. Each pool thread runs torch single-threaded
    (grader.process.single_threaded_torch: OpenMP keeps the setting per thread)."""
    bar = tqdm(total=total, unit=unit, desc="grading", file=sys.stderr, dynamic_ncols=True) if progress else None
    futures: list[Future] = []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grade-all", initializer=single_threaded_torch)
    try:
        for item in items:
            future = pool.submit(work, item)
            if bar is not None:
                future.add_done_callback(lambda _: bar.update(1))
            futures.append(future)
        results = [future.result() for future in futures]
    except BaseException:  # Ctrl-C: drop what has not started (running workers end with their probes' limits)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown()
    return results
