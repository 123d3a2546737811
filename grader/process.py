"""Process-wide setup, in one place: what an entry point (the CLI, the sandbox worker, a test session)
sets once for its whole process, so library functions never change the process they run in.

Torch-free at import: the CLI imports this before the fork server starts (grader.sandbox).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from grader.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
"""The repository root, which is also the nbgrader course directory (nbgrader_config.py is here)."""
REPORT_CACHE_ENV = "ATTENTION_KIT_REPORT_CACHE"
"""An instructor's report cache folder (grader.report.cache), read by the entry points only: the CLI for
`grade` and `grade-all`, nbgrader_config.py for `nbgrader autograde`."""
PROBE_SECONDS_ENV = "ATTENTION_KIT_PROBE_SECONDS"
"""The time one probe call may take, in place of the 10 s default (grader.sandbox.confinement.Limits): a slow
grading machine may raise it; the test suite lowers it, since waiting out the limit is what its timeout
fixtures test. Read by grader.grade.default_limits, the limits of every entry point's grading."""


def single_threaded_torch() -> None:
    """Grading's own tensor work (float64 references, comparisons, decoding answers) is on tiny
    tensors, where torch's intra-op threads only add wake-up latency to every op, and much more on
    a busy machine (a 16x16 triu: 30 us with one thread, 8 ms with two on a loaded 2-core box; a
    submission's parent-side time went from 1.4 s to 0.3 s). --jobs gives the parallelism instead,
    across submissions. Tiny tensors are never split across threads, so no result changes.
    OpenMP keeps the setting per thread: each grading thread and each worker calls this."""
    import torch  # here, not at the top: the CLI imports this module before torch may load

    torch.set_num_threads(1)


def freeze_imported_objects() -> None:
    """Move every object made so far (torch's import alone makes about 170 k) out of the garbage collector's sight,
    once the grading modules are imported: they live as long as the process, and each full collection would walk
    them all again, about 0.1 s of the parent's CPU once every grading or two. Later objects are collected as
    before; no value a grading computes changes."""
    import gc

    gc.freeze()


def nbgrader_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment for running nbgrader: it calls `alembic` through PATH (to create or stamp a
    gradebook), so this Python's bin folder goes first."""
    base = dict(os.environ if base is None else base)
    return {**base, "PATH": os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])}


def put_nbgrader_tools_on_path() -> None:
    """For nbgrader's Gradebook in this process, which runs `alembic` through this process's PATH and
    takes no environment of its own: an entry point calls this once (the CLI, and nbgrader_config.py for every
    nbgrader command)."""
    if os.environ.get("PATH", "").split(os.pathsep)[0] != str(Path(sys.executable).parent):
        os.environ["PATH"] = nbgrader_env()["PATH"]


def open_gradebook(db_url: str, course_id: str | None = None):
    """nbgrader's Gradebook (a context manager). A new database needs `alembic` on PATH
    (put_nbgrader_tools_on_path, done by the entry point)."""
    from nbgrader.api import Gradebook  # here: only the nbgrader verbs pay for importing nbgrader

    return Gradebook(db_url, course_id) if course_id else Gradebook(db_url)


def probe_seconds_from_env() -> float | None:
    """The per-call limit an instructor set through PROBE_SECONDS_ENV, if any; a value that is not a number of
    seconds between 0 and 600 is a UsageError, never a silent default."""
    value = os.environ.get(PROBE_SECONDS_ENV, "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 600:
        raise UsageError(f"{PROBE_SECONDS_ENV}={value!r}: give the seconds one probe call may take, above 0 and "
                         "at most 600")
    return seconds


def report_cache_from_env() -> Path | None:
    """The report cache folder an instructor chose through REPORT_CACHE_ENV, if any."""
    value = os.environ.get(REPORT_CACHE_ENV)
    return Path(value) if value else None
