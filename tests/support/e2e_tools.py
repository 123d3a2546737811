"""What the slow tiers need beyond .venv, installed once by `make test-setup` (which `make test` runs) and then
found by the tests: Debian's Chromium and PostgreSQL, a venv holding only what Colab has, and a venv of the
system's Python 3.11 that an ordinary user can run (the non-root grading path).

`python tests/support/e2e_tools.py` installs whatever is missing and does nothing when all is there; the tests never
install (a test that waits on apt is a slow, flaky test): each skips with the command to run when its tool is
missing. Installing Debian packages needs root and apt-get; without them the script says what it could not do.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

DEBIAN_PACKAGES = {  # package -> how to tell it is installed
    "chromium": lambda: chromium() is not None,
    "fonts-wqy-microhei": lambda: Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc").is_file(),  # Chinese glyphs
    "postgresql": lambda: postgres_bin() is not None,
}
SKIPPED_WITHOUT = {  # a Debian package -> the test file that skips without it
    "chromium": "tests/nbgrader_plugins/test_nbgrader_feedback_browser.py",
    "fonts-wqy-microhei": "tests/nbgrader_plugins/test_nbgrader_feedback_browser.py",
    "postgresql": "tests/grade_all/test_grade_all_postgres.py",
}
COLAB_PACKAGES = ("torch==2.13.0", "pytest", "numpy", "matplotlib", "nbformat")
COLAB_VENV = Path("/tmp/attention-kit-colab-like-venv")  # outside the clone: every clone on the machine reuses it
SYSTEM_PYTHON = Path("/usr/bin/python3.11")  # readable by every user (root's own Python may not be)
UNPRIVILEGED_VENV = Path("/tmp/attention-kit-unprivileged-venv")
SETUP_HINT = "run `make test-setup` (docs/developing.md)"
SKIPPED_WITHOUT_VENV = {  # a venv -> the tests that skip without it
    COLAB_VENV: "tests/student/test_public_selfcheck.py skips (the self-check as a student runs it)",
    UNPRIVILEGED_VENV: "tests/sandbox/test_unprivileged.py and test_no_secret_in_worker.py[nobody] skip "
                       "(grading as an ordinary user)",
}


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def colab_python() -> Path | None:
    """The Colab-like venv's python, when it was made with exactly COLAB_PACKAGES."""
    ready = COLAB_VENV / ".ready"
    return COLAB_VENV / "bin" / "python" if ready.is_file() and ready.read_text() == " ".join(COLAB_PACKAGES) else None


def grading_requirements() -> list[str]:
    """What grading needs (not nbgrader): this suite's torch (the local wheel), numpy, and pyproject's pyseccomp."""
    import torch

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    seccomp = re.search(r'"(pyseccomp[^"]*)"', pyproject).group(1)
    return [f"torch=={torch.__version__.split('+')[0]}", "numpy", seccomp]


def closed_to_others(path: Path) -> Path | None:
    """The first folder on the way to `path` that another user cannot enter or read (a clone under a 0700
    home, a `mkdtemp` folder), or None."""
    path = path.resolve()
    for folder in [*reversed(path.parents), path]:
        mode = folder.stat().st_mode
        if not mode & 0o001 or (folder == path and not mode & 0o004):
            return folder
    return None


def unprivileged_python() -> Path | None:
    """The system Python's venv with what grading needs, when it was made with exactly those packages."""
    ready = UNPRIVILEGED_VENV / ".ready"
    made = ready.is_file() and ready.read_text() == " ".join(grading_requirements())
    return UNPRIVILEGED_VENV / "bin" / "python" if made else None


def make_venv(folder: Path, python: Path | str, packages: list[str]) -> str | None:
    """None when made, else why not, in one line."""
    shutil.rmtree(folder, ignore_errors=True)
    for command in ([str(python), "-m", "venv", str(folder)],
                    [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", *packages]):
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"`{' '.join(command[1:4])}` did not run ({error})"
        if done.returncode != 0:
            said = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
            return f"`{' '.join(command[1:4])}` failed ({(said[-1] if said else f'exit status {done.returncode}')[:300]})"
    try:
        (folder / ".ready").write_text(" ".join(packages))
    except OSError as error:
        return f"{folder} could not be marked ready ({error})"
    return None


def install_debian_packages(packages: list[str]) -> str | None:
    """None when installed, else why not, in one line."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"installing them needs root and apt-get (apt-get install -y {' '.join(packages)})"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *packages]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            said = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
            errors = [line for line in said if line.startswith(("E:", "W:"))] or said[-1:]
            return f"`{' '.join(command)}` failed ({' '.join(errors[-2:])[:300] or f'exit status {done.returncode}'})"
    return None


def skipped_without(packages: list[str]) -> str:
    """One line: which test files skip without `packages`, and why."""
    files = {}
    for package in packages:
        files.setdefault(SKIPPED_WITHOUT[package], []).append(package)
    return "; ".join(f"{file} skips (no {', '.join(missing)})" for file, missing in files.items())


def main() -> int:
    done = []
    missing = [package for package, installed in DEBIAN_PACKAGES.items() if not installed()]
    if missing:
        problem = install_debian_packages(missing)
        if problem:
            print(f"test-setup: {' '.join(missing)} not installed: {problem}; {skipped_without(missing)}; "
                  f"fix that and run `make test-setup` again", file=sys.stderr)
        else:
            done += missing
    venvs = [("the Colab-like venv", colab_python, COLAB_VENV, sys.executable, list(COLAB_PACKAGES))]
    if SYSTEM_PYTHON.exists():
        venvs.append(("the unprivileged user's venv", unprivileged_python, UNPRIVILEGED_VENV, SYSTEM_PYTHON,
                      grading_requirements()))
    for name, made, folder, python, packages in venvs:
        if made() is None:
            problem = make_venv(folder, python, packages)
            if problem:
                print(f"test-setup: {name} at {folder} not made: {problem}; {SKIPPED_WITHOUT_VENV[folder]}; "
                      f"fix that and run `make test-setup` again", file=sys.stderr)
            else:
                done.append(name)
    print(f"test-setup: installed {', '.join(done)}" if done else "test-setup: everything was there already")
    return 0


if __name__ == "__main__":
    sys.exit(main())
