"""Do the tests that run code as another uid pass in a clone inside a folder only its owner may enter (what
`mktemp -d`, /root and most homes are)?

Another uid cannot reach a file of such a clone, whatever the file's own mode: the worker with the uid drop alone (no
mount namespace binds the venv into its root) and the hostile file run as an ordinary uid must do without it. This
test binds the clone into a fresh 0700 folder, in a mount namespace of its own (the host's mounts stay as they
are), and runs those tests from there in a pytest of their own: they pass, none skips. The `nobody` tests
(test_unprivileged.py, test_no_secret_in_worker.py) run the same copy for other users as the terminal test
(support/for_other_users.py), and take a minute each, so they are left out here.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.capabilities import CI_EXPECTS_ENV, needs_root
from support.e2e_tools import closed_to_others
from support.paths import ROOT

pytestmark = [pytest.mark.sandbox, needs_root("binding the clone into a private folder needs root (CI runs as root)")]

AS_ANOTHER_UID = [
    "tests/sandbox/test_sandbox_layers_alone.py::test_the_uid_drop_alone_takes_roots_powers_away",
    "tests/sandbox/test_sandbox_layers_alone.py::test_the_process_limit_alone_stops_a_bomb_at_64",
    "tests/sandbox/test_confinement_hostile.py::test_nothing_is_typed_into_the_terminal_that_runs_the_grader",
]


def _python_seen_from(private: Path, clone: Path) -> tuple[Path, list[tuple[Path, Path]]]:
    """The venv's python as seen from inside `private`, and the binds that put it there: the clone (the venv
    inside it, as `make` makes it), and the venv itself where it lies elsewhere (the mutation audit's copies)."""
    binds, prefix, executable = [(ROOT, clone)], Path(sys.prefix), Path(sys.executable)
    if executable.is_relative_to(ROOT):
        return clone / executable.relative_to(ROOT), binds
    if not executable.is_relative_to(prefix):  # no venv: the system's Python, which every user may run
        return executable, binds
    (private / "venv").mkdir()
    return private / "venv" / executable.relative_to(prefix), binds + [(prefix, private / "venv")]


def test_the_tests_run_as_another_uid_pass_in_a_clone_inside_a_private_folder():
    private = Path(tempfile.mkdtemp(prefix="attention-kit-private-home-"))  # 0700, as `mktemp -d` makes it
    try:
        clone = private / "clone"
        clone.mkdir()
        assert closed_to_others(clone) == private, "the folder must be closed to other users, as a 0700 home is"
        python, binds = _python_seen_from(private, clone)
        pytest_there = [str(python), "-m", "pytest", "-ra", "-p", "no:cacheprovider", "-n", "0", *AS_ANOTHER_UID]
        # `unshare --mount` makes every mount private to the new namespace: the binds never reach the host
        script = " && ".join([*(f"mount --bind {shlex.quote(str(a))} {shlex.quote(str(b))}" for a, b in binds),
                              f"cd {shlex.quote(str(clone))}", shlex.join(["exec", *pytest_there])])
        done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, timeout=540,
                              env={**os.environ, CI_EXPECTS_ENV: "root"})
    finally:
        shutil.rmtree(private)  # on the host, the binds' mount points are empty folders
    assert f"rootdir: {clone}" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]  # it ran from the private folder
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0 and f" {len(AS_ANOTHER_UID)} passed" in summary and "skipped" not in summary, \
        done.stdout[-6000:] + done.stderr[-2000:]
