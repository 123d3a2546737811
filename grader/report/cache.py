"""A content-addressed cache of reports, so a class graded in parallel once (grade-all) is not
graded again when nbgrader autograde writes the gradebook.

Opt-in: grading is given a folder the instructor owns (student code never sees it: the sandbox
hides everything but the system and Python). The entry points take it from $ATTENTION_KIT_REPORT_CACHE
(grader.process.REPORT_CACHE_ENV: grader.cli, nbgrader_config.py) or pick one (`grade-all --nbgrader`); nothing here reads the
environment. The key covers everything a report depends on: the code that runs and where its lines come from, the checks,
the worker's limits (time, memory, what it may see), CUDA, the torch version and the grader's own files, so a changed
grader, limit or torch never serves an old verdict. Not the language: a report holds both.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from grader.handin.source import Submission

if TYPE_CHECKING:
    from grader.sandbox.confinement import Limits


@lru_cache(maxsize=1)
def grader_fingerprint() -> str:
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # the whole grader package
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def key(submission: Submission, check_ids: list[str], limits: Limits, cuda: bool, torch_version: str) -> str:
    """Every field of `limits` counts: a time or memory limit changes verdicts, as torch's version changes op counts."""
    material = json.dumps([submission.source, submission.origin, submission.syntax_errors, submission.is_notebook,
                           check_ids, dataclasses.asdict(limits), cuda, torch_version, grader_fingerprint()])
    return hashlib.sha256(material.encode()).hexdigest()


def load(root: Path | None, cache_key: str) -> tuple[dict, float] | None:
    """(the report cached under `cache_key` in the folder `root`, the seconds its grading took), if any (none
    without a folder)."""
    path = root / f"{cache_key}.json" if root else None
    if path is None or not path.is_file():
        return None
    stored = json.loads(path.read_text(encoding="utf-8"))
    return stored["report"], stored["seconds"]


def store(root: Path | None, cache_key: str, report: dict, seconds: float) -> None:
    """Keep `report` with the `seconds` its grading took: a hand-in's fix search shares one time budget with its
    grading (grader.grade.Grading.left), so a report read from here is charged as if it had run again."""
    if root is None:
        return
    root.mkdir(parents=True, exist_ok=True)
    temporary = root / f".{cache_key}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps({"report": report, "seconds": seconds}, ensure_ascii=False), encoding="utf-8")
    temporary.replace(root / f"{cache_key}.json")  # atomic: parallel graders never see half a file


@contextlib.contextmanager
def claimed(root: Path | None, cache_key: str) -> Iterator[None]:
    """Hold `cache_key` while its report is computed: another grader of the same source (a parallel job, a
    second shard, a test worker) waits and then reads the stored report instead of grading it again. A
    folder whose file system has no locks (some network mounts) just goes without."""
    if root is None:
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    lock_path = root / f".{cache_key}.lock"
    with open(lock_path, "ab") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:
            pass
        try:
            yield
        finally:
            # removed before closing releases it, so the folder keeps reports only: a grader waiting on this
            # lock then finds the stored report, and a later one finds it before looking for a lock. (After a
            # failed grading, two graders may compute the same report; each stores it whole.)
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
