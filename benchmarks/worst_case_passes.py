"""The parent's CPU time for each text pass over each worst hand-in the size caps allow.

The hand-ins are tests/support/worst_case_code.py's (one statement kind filling the code cap each, read by the graded
code, so every pass reads every byte). For each: reading it (extracting what the graded names need), the
grading rules with their attribution to parts, the static pass, and the fix rewrites, each timed with
`time.process_time`, the fastest of `--repeat` runs. tests/handin/test_parent_bounded.py holds their sum under the
parent's budget; this prints where it goes.

    .venv/bin/python benchmarks/worst_case_passes.py [--repeat 3] [CASE ...]
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from grader import rules, static_pass  # noqa: E402
from grader.fixes.candidates import candidates  # noqa: E402
from grader.fixes.rewrites import REWRITES  # noqa: E402
from grader.handin.source import submission_from_cells  # noqa: E402
from worst_case_code import WORST  # noqa: E402
from grader.exercises.attention import EXERCISE


def cpu_seconds(work) -> float:
    """With the collector on, as when grading (its passes over the many nodes are part of the cost), after a
    full collection, so an earlier pass's garbage is not charged to this one."""
    gc.collect()
    started = time.process_time()
    work()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help=f"of {', '.join(sorted(WORST))} (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each pass; the fastest is shown")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'case':<22} {'KiB':>5} {'read':>6} {'rules':>6} {'static':>6} {'fixes':>6} {'total':>6}  (CPU s)")
    for case in args.cases or sorted(WORST):
        code = WORST[case]()
        source = submission_from_cells([code], f"{case}.py", is_notebook=False).source
        passes = {
            "read": lambda: submission_from_cells([code], f"{case}.py", is_notebook=False),
            "rules": lambda: rules.violations(source, EXERCISE),
            "static": lambda: static_pass.analyse(source),
            "fixes": lambda: candidates(source, list(REWRITES), {}, EXERCISE.graded_name),
        }
        spent = {name: min(cpu_seconds(work) for _ in range(args.repeat)) for name, work in passes.items()}
        print(f"{case:<22} {len(code) >> 10:>5} " + " ".join(f"{seconds:>6.2f}" for seconds in spent.values())
              + f" {sum(spent.values()):>6.2f}")
    print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
