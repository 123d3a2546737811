"""What a test runs as another user (`nobody`, a worker's uid), copied where that user may read it.

A clone may live in a folder only its owner may enter (`mktemp -d`, /root, most homes): another uid cannot
reach a file of it, whatever the file's own mode. The tests that run the kit or a hostile file as another
user run a copy of what that user needs, in the same layout as in the clone, under a folder of /tmp that
they open to everyone, so they test the same thing wherever the clone lives.
"""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from support.e2e_tools import closed_to_others
from support.paths import ROOT

TEMPORARY = "/tmp"  # open to every user, as the e2e tools' venvs beside it (e2e_tools.py)


@contextlib.contextmanager
def copied_for_other_users(*paths: Path) -> Iterator[Path]:
    """A folder every user may read holding `paths` (files or folders of the clone) at their places in the
    clone; removed afterwards. A file at ROOT / X is at <the folder> / X."""
    folder = Path(tempfile.mkdtemp(prefix="attention-kit-for-other-users-", dir=TEMPORARY))
    try:
        for path in paths:
            target = folder / path.resolve().relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir():
                shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(path, target)
        for copied in [folder, *folder.rglob("*")]:  # whatever the clone's modes and this process's umask
            copied.chmod(copied.stat().st_mode | (0o555 if copied.is_dir() else 0o444))
        closed = closed_to_others(folder)
        assert closed is None, f"{closed} is closed to other users: the copy for them cannot be read there"
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
