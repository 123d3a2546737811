"""Grade every hand-in of tests/submissions and tests/corpus, or compare two such gradings.

For a change that must not move any verdict (a faster path, a refactor): grade before it and after it,
then compare. Each file is graded as a student of its own by `grade-all --jobs 1` (one fork server for
all, so a run of the ~250 files takes minutes, not an `import torch` each); the summary keeps, per
hand-in, its score, mistakes, advice and every check's id, verdict, points and mistakes.

    .venv/bin/python scripts/grade_every_hand_in.py before.json        # on the old commit
    .venv/bin/python scripts/grade_every_hand_in.py after.json         # on the new one
    .venv/bin/python scripts/grade_every_hand_in.py --compare before.json after.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HAND_INS = ("tests/submissions/*/*.py", "tests/submissions/*/*.ipynb", "tests/corpus/*.py",
            "tests/submissions/kv_cache/*/*.py")  # the second lab's: each grading takes its exercise from the hand-in
NOT_HAND_INS = {"expected.py", "__init__.py"}


def grade_every_hand_in(out: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="every-hand-in-") as scratch:
        folder = Path(scratch) / "class"
        for pattern in HAND_INS:
            for path in sorted(ROOT.glob(pattern)):
                if path.name not in NOT_HAND_INS:
                    lab = "kv_cache-" if path.parent.parent.name == "kv_cache" else ""  # its own, beside the first lab's
                    student = folder / f"{lab}{path.parent.name}__{path.name}".replace(".", "-")
                    student.mkdir(parents=True)
                    shutil.copyfile(path, student / path.name)
        report = Path(scratch) / "reports.json"
        subprocess.run([sys.executable, "-m", "grader", "grade-all", str(folder), "--jobs", "1", "--json", str(report)],
                       cwd=ROOT, stdout=subprocess.DEVNULL, check=False)
        rows = json.loads(report.read_text(encoding="utf-8"))
    summary = {Path(row["submission"]).parent.name: {
        "score": row.get("score"), "mistakes": row.get("mistakes"), "advice": row.get("advice"),
        "checks": [[c["id"], c["passed"], c["points"], c.get("mistakes")] for c in row.get("checks", [])]}
        for row in rows}
    out.write_text(json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(summary)} hand-ins graded into {out}")
    return 0


def compare(before_path: Path, after_path: Path) -> int:
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (before_path, after_path))
    moved = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    for name in moved:
        old, new = before.get(name, {}), after.get(name, {})
        print(f"{name}: {old.get('score')} {old.get('mistakes')} -> {new.get('score')} {new.get('mistakes')}")
        for old_check, new_check in zip(old.get("checks", []), new.get("checks", [])):
            if old_check != new_check:
                print(f"    {old_check} -> {new_check}")
    print(f"{len(moved)} of {len(before.keys() | after.keys())} hand-ins differ")
    return 1 if moved else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="where to write the summary of this checkout's grading")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="compare two summaries")
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("give OUT, or --compare BEFORE AFTER")
    return grade_every_hand_in(args.out)


if __name__ == "__main__":
    sys.exit(main())
