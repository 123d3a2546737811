"""`python -m grader gradescope build`: autograder.zip for a Gradescope programming assignment.

The zip holds, at its top level as Gradescope wants: `setup.sh` (run once when the image is built:
Python, the pinned CPU torch, the kit's dependencies, libseccomp for the sandbox's filter),
`run_autograder` (run per submission: `grader gradescope run`) and the kit's `grader/` package beside
them (Gradescope unpacks the zip into /autograder/source).
The kit itself is not pip-installed: it runs from /autograder/source, which the grading worker never sees
(grader.sandbox.worker_process.python_paths keeps the kit's own folder out), so no copy of the hidden
graders lands in site-packages where student code could read it. The solutions are not in the zip.
"""
from __future__ import annotations

import zipfile
from importlib import metadata
from pathlib import Path

from grader.process import ROOT
from grader.gradescope.run import FIX_CREDIT_ENV

TORCH_SPEC = "torch==2.13.0"
"""The Makefile's TORCH_SPEC: the CPU build the kit is tested with."""
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
KIT_FILES = ("grader", "pyproject.toml")
"""What of the repository run_autograder needs: the grader package (with mistakes.json) and its dependency list."""


def dependencies() -> list[str]:
    """The kit's runtime dependencies (pyproject.toml; on Python 3.10, without tomllib, as .venv installed them),
    without torch (the pinned CPU build comes first) and without the extras."""
    try:
        import tomllib

        declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    except ImportError:
        declared = [d for d in metadata.requires("attention-kit") or [] if ";" not in d]
    return [d for d in declared if not d.replace(" ", "").startswith("torch")]


def setup_sh() -> str:
    requirements = " ".join(f"'{d}'" for d in dependencies())
    return f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (written by `python -m grader gradescope build`).
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip libseccomp2
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --no-cache-dir '{TORCH_SPEC}' --index-url {TORCH_INDEX}
/autograder/venv/bin/pip install --no-cache-dir {requirements}
"""


def run_autograder_sh(fix_credit: float, exercise: str) -> str:
    """AUTOGRADER_ROOT and AUTOGRADER_PYTHON exist for the kit's tests, which run it in a temporary tree."""
    return f"""#!/usr/bin/env bash
# Gradescope runs this per submission: grade /autograder/submission, write /autograder/results/results.json.
set -euo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
cd "$root/source"
export {FIX_CREDIT_ENV}={fix_credit:g}
exec "${{AUTOGRADER_PYTHON:-$root/venv/bin/python}}" -m grader gradescope run --exercise {exercise} --root "$root"
"""


def _add(archive: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, text)


def build(out: Path, exercise: str, fix_credit: float = 0.0) -> Path:
    """Write the zip of `exercise`'s autograder (deterministic: fixed times, sorted entries)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        _add(archive, "setup.sh", setup_sh(), executable=True)
        _add(archive, "run_autograder", run_autograder_sh(fix_credit, exercise), executable=True)
        for top in KIT_FILES:
            paths = [ROOT / top] if (ROOT / top).is_file() else sorted((ROOT / top).rglob("*"))
            for path in paths:
                if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".toml"):
                    _add(archive, path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))
    return out


def main(*, exercise: str, out: str = "autograder.zip", fix_credit: float | None = None) -> int:
    path = build(Path(out), exercise, fix_credit or 0.0)
    print(f"wrote {path}: upload it as the autograder of a Gradescope programming assignment")
    return 0
