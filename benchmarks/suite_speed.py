"""How long the test suite takes, tier by tier, on this machine: the figures README's *Developing* quotes.

By default it clones the repository's HEAD into a temporary folder (closed to other users, as a user's own
`mktemp -d` or home folder is) and times there what a newcomer runs:
`make test-fast` (the unit tier, on a clone whose .venv was just made), then `make test` (every tier; the
venv made from nothing when --with-venv), each with the load average, and the
number of tests pytest reports, with the 1-minute load average sampled every 5 s during each command
(its mean and maximum: the machine's other work shows there). The clone is removed at the end.

    .venv/bin/python benchmarks/suite_speed.py                # make venv, make test-fast, make test
    .venv/bin/python benchmarks/suite_speed.py --with-venv    # make test from nothing (venv included), make test-fast
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], cwd: Path) -> dict:
    samples, stop = [os.getloadavg()[0]], threading.Event()

    def sample() -> None:
        while not stop.wait(5):
            samples.append(os.getloadavg()[0])

    sampler = threading.Thread(target=sample, daemon=True)
    started = time.monotonic()
    sampler.start()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env={**os.environ, "CI": "true"})
    wall = time.monotonic() - started
    stop.set()
    sampler.join()
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    return {"command": " ".join(command), "wall": wall, "rc": done.returncode, "load_mean": sum(samples) / len(samples),
            "load_max": max(samples), "summary": summary.strip("= "), "tail": (done.stdout + done.stderr)[-3000:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--with-venv", action="store_true", help="time `make test` with .venv made from nothing")
    args = parser.parse_args()
    clone = Path(tempfile.mkdtemp(prefix="attention-kit-tiers-")) / "clone"  # 0700, as `mktemp -d` and most homes are
    try:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        results = []
        if args.with_venv:
            results.append(timed(["make", "test"], clone))
            results.append(timed(["make", "test-fast"], clone))
        else:
            results.append(timed(["make", "venv"], clone))
            results.append(timed(["make", "test-fast"], clone))
            results.append(timed(["make", "test"], clone))
        print(f"{'command':<16}{'wall s':>9}{'load mean':>11}{'load max':>10}  pytest")
        for r in results:
            print(f"{r['command']:<16}{r['wall']:9.1f}{r['load_mean']:11.2f}{r['load_max']:10.2f}  {r['summary']}")
        failed = [r for r in results if r["rc"] != 0]
        for r in failed:
            print(f"\n{r['command']} exited {r['rc']}:\n{r['tail']}", file=sys.stderr)
        return 1 if failed else 0
    finally:
        shutil.rmtree(clone.parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
