"""Run a hostile file in a sandbox worker with only some isolation layers on (the layer-by-layer tests).

The file runs as the worker loads it, with the grading rules off (as if a trick got past them), and
reports what it saw by raising `RuntimeError("seen " + repr(result))`; `ARGUMENTS` (a dict) is
prepended to it. The layer names are written out here, not imported: a layer the code drops or renames
fails these tests instead of silently leaving them less to switch off.
"""
from __future__ import annotations

import ast
import os
from dataclasses import dataclass

import pytest

from grader.grade import default_limits
from grader.sandbox import worker_process
from grader.sandbox.confinement import Limits
from grader.sandbox.worker_process import Worker, WorkerFailure
from support.capabilities import lacking
from support.paths import SUBMISSIONS

LAYER_FILES = SUBMISSIONS / "layers"
ALL_LAYERS = ("net", "pid", "mount", "ipc", "uts", "uid", "seccomp", "read-only-binds", "memory-cgroup", "rlimits",
              "process-count", "tmpfs-caps", "environment")
OFF_NOTE = "(switched off by the test suite)"


@dataclass
class Outcome:
    seen: dict | None  # what the file reported; None when the worker ended before it could
    failure: WorkerFailure | None  # how the worker ended, when it did
    missing: list[str]  # the worker's own list of the layers it lacks


def needs_root() -> None:
    if os.geteuid() != 0:
        lacking("root", "the uid drop, the memory cgroup and switching layers off one by one")


def run_with_only(file: str, layers_on: set[str], arguments: dict | None = None, limits: Limits | None = None,
                  monkeypatch: pytest.MonkeyPatch | None = None) -> Outcome:
    """Run tests/submissions/layers/`file` in a worker with `layers_on` alone; every other layer off."""
    assert layers_on <= set(ALL_LAYERS), layers_on
    source = f"ARGUMENTS = {arguments or {}!r}\n" + (LAYER_FILES / file).read_text()
    limits = limits or Limits(**{**default_limits().__dict__, "probe_seconds": 60.0})
    layers_off = frozenset(ALL_LAYERS) - layers_on
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(worker_process, "RUNTIME_GUARDS", False)  # the layers on their own, as if a trick got past the rules
        try:
            worker = Worker(source, limits, False, layers_off=layers_off)
        except WorkerFailure as failure:
            return Outcome(None, failure, [])
    try:
        errors = worker.ready.get("load_errors", [])
        pieces = [e["message"][len("seen "):] for e in errors if e["message"].startswith("seen ")]
        assert pieces, errors
        seen = ast.literal_eval("".join(pieces))  # a long report comes in pieces, each under a message's cap
        missing = worker.missing_isolation
    finally:
        worker.close()
    expected_missing = sorted(f"{layer} {OFF_NOTE}" for layer in layers_off)
    assert sorted(m for m in missing if OFF_NOTE in m) == expected_missing, missing
    assert not [m for m in missing if OFF_NOTE not in m], f"a layer that should be on did not take: {missing}"
    return Outcome(seen, None, missing)
