"""The released self-checks: release/attention's loaded into a test's own process, and any exercise's run as a
student runs it (`python -m pytest` in a copy of its release folder, with only what Colab has)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import e2e_tools
from support.paths import ROOT



def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_public(exercise: str = "attention"):
    """(selfcheck.py, its pytest loader conftest.py, which imports `selfcheck`), from release/<exercise>/."""
    release = ROOT / "release" / exercise
    sys.path.insert(0, str(release))
    try:
        selfcheck = load("selfcheck", release / "selfcheck.py")
        sys.modules["selfcheck"] = selfcheck
        loader = load(f"public_selfcheck_conftest_{exercise}", release / "conftest.py")
    finally:
        sys.path.remove(str(release))
        sys.modules.pop("selfcheck", None)
    return selfcheck, loader


def colab_python() -> Path:
    """The venv with only the Colab-like packages (e2e_tools.COLAB_PACKAGES), made by `make test-setup`."""
    python = e2e_tools.colab_python()
    if python is None:
        pytest.skip(f"no Colab-like venv at {e2e_tools.COLAB_VENV}: {e2e_tools.SETUP_HINT}")
    return python


def release_copy(exercise: str, into: Path) -> Path:
    """release/<exercise>/ alone, copied into `into` (nothing else of the repository)."""
    folder = into / exercise
    shutil.copytree(ROOT / "release" / exercise, folder)
    return folder


def clean_env() -> dict[str, str]:
    """This process's environment without what would point the self-check elsewhere (any `<NAME>_IMPL`) or at
    this repository's packages."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.endswith("_IMPL")}


def selfcheck(python: Path, folder: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m pytest` in `folder`, as a student runs it there."""
    return subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=folder,
                          env=clean_env(), capture_output=True, text=True, timeout=300)
