"""What the e2e tier needs beyond .venv, installed once by `make test-setup` (which `make test` runs) and then
found by the tests: Debian's Chromium and PostgreSQL, and a venv holding only what Colab has.

`python tests/e2e_tools.py` installs whatever is missing and does nothing when all is there; the tests never
install (a test that waits on apt is a slow, flaky test): each skips with the command to run when its tool is
missing. Installing Debian packages needs root and apt-get; without them the script says what it could not do.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

DEBIAN_PACKAGES = {  # package -> how to tell it is installed
    "chromium": lambda: chromium() is not None,
    "fonts-wqy-microhei": lambda: Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc").is_file(),  # Chinese glyphs
    "postgresql": lambda: postgres_bin() is not None,
}
COLAB_PACKAGES = ("torch==2.13.0", "pytest", "numpy", "matplotlib", "nbformat")
COLAB_VENV = Path("/tmp/attention-kit-colab-like-venv")  # outside the clone: every clone on the machine reuses it
SETUP_HINT = "run `make test-setup` (README, *Developing*)"


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def colab_python() -> Path | None:
    """The Colab-like venv's python, when it was made with exactly COLAB_PACKAGES."""
    ready = COLAB_VENV / ".ready"
    return COLAB_VENV / "bin" / "python" if ready.is_file() and ready.read_text() == " ".join(COLAB_PACKAGES) else None


def install_debian_packages(packages: list[str]) -> str | None:
    """None when installed, else why not."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"installing {' '.join(packages)} needs root and apt-get (apt-get install -y {' '.join(packages)})"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *packages]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            return f"{' '.join(command)} failed:\n{(done.stdout + done.stderr)[-1500:]}"
    return None


def make_colab_venv() -> None:
    shutil.rmtree(COLAB_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(COLAB_VENV)], check=True)
    subprocess.run([str(COLAB_VENV / "bin" / "python"), "-m", "pip", "install", "-q", *COLAB_PACKAGES], check=True,
                   timeout=1800)
    (COLAB_VENV / ".ready").write_text(" ".join(COLAB_PACKAGES))


def main() -> int:
    done = []
    missing = [package for package, installed in DEBIAN_PACKAGES.items() if not installed()]
    if missing:
        problem = install_debian_packages(missing)
        if problem:
            print(f"test-setup: {problem}\ntest-setup: the e2e tests that need them skip, saying so", file=sys.stderr)
        else:
            done += missing
    if colab_python() is None:
        make_colab_venv()
        done.append("the Colab-like venv")
    print(f"test-setup: installed {', '.join(done)}" if done else "test-setup: everything was there already")
    return 0


if __name__ == "__main__":
    sys.exit(main())
