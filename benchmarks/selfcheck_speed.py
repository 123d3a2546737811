"""How long the published self-check takes on the reference, beside a bare `import torch`, in one run.

Copies release/attention/ alone into a temporary folder with the reference notebook as attention.ipynb,
then alternates, N times each: `python -c "import torch"` and `python -m pytest` (all, `-m part1`,
`-m part2`) there, and prints the median wall time of each and its ratio to the bare import.

    .venv/bin/python benchmarks/selfcheck_speed.py [--runs 5] [--python PATH] [--record]

--record appends the figures to benchmarks/RESULTS.md ("The public self-check"), with the command and the load.

--python picks the interpreter that runs both (default: this one); tests/student/test_public_selfcheck.py
builds a Colab-like one at /tmp/attention-kit-colab-like-venv/bin/python.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_page import load_average, record

ROOT = Path(__file__).resolve().parent.parent


def wall(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=False, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--record", action="store_true", help="append the figures to benchmarks/RESULTS.md")
    options = parser.parse_args()
    load_at_start = load_average()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "attention"
        shutil.copytree(ROOT / "release" / "attention", folder)
        shutil.copy(ROOT / "solutions" / "attention" / "attention.ipynb", folder / "attention.ipynb")
        pytest = [options.python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        commands = {
            "import torch": [options.python, "-c", "import torch"],
            "pytest (both parts)": pytest,
            "pytest -m part1": pytest + ["-m", "part1"],
            "pytest -m part2": pytest + ["-m", "part2"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(options.runs):
            for name, command in commands.items():
                times[name].append(wall(command, folder))
    floor = statistics.median(times["import torch"])
    figures = [f"{name:<22} median {statistics.median(measured):5.2f} s  "
               f"({statistics.median(measured) / floor:4.2f}x import torch)  runs: "
               + " ".join(f"{t:.2f}" for t in measured) for name, measured in times.items()]
    print("\n".join(figures))
    if options.record:
        record("The public self-check", figures, load_at_start)


if __name__ == "__main__":
    main()
