"""What a grading costs today against an older commit: one class, both codes, alternating runs on this machine.

The class is the reference solution and the mutants of tests/submissions/mutants/ (each one classic mistake) as
`.py` files in one folder, less the mutants that attack the machine rather than the grader (memory-limit and
timeout wait out a limit; tampering ends its worker), as benchmarks/grading_speed.py leaves them out. The older
commit (default 9ed8d26, the last commit before the graph) is checked out with `git worktree add` in a temporary
folder and run with this checkout's `.venv`, as is each `--also` commit. Each round grades the class with
`grade-all --jobs 1` once with each code, a different code first each round so that a change of load falls on
all alike; the report cache is off. "today" is this checkout's working tree: leave it alone while it runs.

For each run: wall time, and the CPU time of the command and every process under it (workers, judges, the fork
server), read with getrusage(RUSAGE_CHILDREN) in a small driver that is the subreaper of the command's tree, so
that a process whose parent left first is still reaped and counted. Printed: each run with the load average, the
median wall and CPU of each code, their ratios (each / older: below 1 is cheaper today), and whether every
score is equal; each difference is listed with the mistake ids of today's report that the older catalog lacks.

    .venv/bin/python benchmarks/grading_cost.py                       # 3 pairs, against 9ed8d26
    .venv/bin/python benchmarks/grading_cost.py --pairs 2 --every 4   # every 4th file of the class: quicker
    .venv/bin/python benchmarks/grading_cost.py --also 62640ae         # and the commit before a change, alike
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "tests" / "submissions" / "mutants"
REFERENCE = ROOT / "solutions" / "attention" / "attention.py"
LEFT_OUT = {"memory-limit", "timeout", "timeout__2", "tampering"}
DRIVER = """import ctypes, json, os, resource, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the tree come here
started = time.perf_counter()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - started
while True:  # reap what the command left behind, so its CPU is counted too
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": used.ru_utime + used.ru_stime, "rc": done.returncode,
                  "stderr": done.stderr[-3000:]}))
"""


def class_files(every: int) -> list[Path]:
    mutants = [p for p in sorted(MUTANTS.glob("*.py")) if p.stem not in LEFT_OUT]
    return [REFERENCE] + mutants[::every]


def write_class(folder: Path, files: list[Path]) -> None:
    folder.mkdir(parents=True)
    for path in files:
        # "wrong-scale__2" would read as student "wrong-scale" handing in twice (`<student_id>_<name>`): one id each
        shutil.copyfile(path, folder / f"{path.stem.replace('_', '-')}.py")


def clean_env() -> dict[str, str]:
    """This process's environment without the test session's report cache (every run grades afresh)."""
    return {k: v for k, v in os.environ.items() if k != "ATTENTION_KIT_REPORT_CACHE"}


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def graded(code: Path, class_dir: Path, out: Path) -> dict:
    """One `grade-all --jobs 1` of the class with the grader in `code`: wall, CPU of the whole tree, scores."""
    command = [sys.executable, "-m", "grader", "grade-all", str(class_dir), "--jobs", "1", "--json", str(out)]
    before = load_average()
    done = subprocess.run([sys.executable, "-c", DRIVER, *command], cwd=code, env=clean_env(),
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    result["load"] = f"{before} -> {load_average()}"
    reports = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
    result["reports"] = {Path(r["submission"]).stem: r for r in reports}
    out.unlink(missing_ok=True)
    return result


def catalog_ids(commit: str) -> set[str]:
    shown = subprocess.run(["git", "show", f"{commit}:grader/mistakes.json"], cwd=ROOT, capture_output=True,
                           text=True, check=True)
    return set(json.loads(shown.stdout))


def score_differences(today: dict, older: dict, older_ids: set[str],
                      names: tuple[str, str] = ("today", "older")) -> list[str]:
    lines = []
    for name in sorted(set(today) | set(older)):
        new, old = today.get(name), older.get(name)
        if new is None or old is None:
            lines.append(f"{name}: graded by {names[1] if new is None else names[0]} only")
        elif new["score"] != old["score"]:
            unknown = sorted(set(new.get("mistakes", [])) - older_ids)
            why = f"ids the older catalog lacks: {', '.join(unknown)}" if unknown else "no new id explains it"
            lines.append(f"{name}: {names[0]} {new['score']}, {names[1]} {old['score']} ({why}; {names[0]} "
                         f"{new.get('mistakes')}, {names[1]} {old.get('mistakes')})")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", default="9ed8d26", help="the older commit (default 9ed8d26, before the graph)")
    parser.add_argument("--also", action="append", default=[], metavar="COMMIT",
                        help="another commit graded in the same rotation (e.g. the one before a change)")
    parser.add_argument("--pairs", type=int, default=3, help="runs of each code, alternating (default 3)")
    parser.add_argument("--every", type=int, default=1, help="grade every k-th mutant only (default 1: all)")
    parser.add_argument("--json", dest="json_out", metavar="OUT", help="write the runs' figures as JSON")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="grading-cost-"))
    files = class_files(args.every)
    codes = {"today": ROOT}
    for commit in [*args.also, args.old]:
        tree = work / f"code-{commit}"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), commit], cwd=ROOT, check=True)
        codes["older" if commit == args.old else commit] = tree
    try:
        write_class(work / "class", files)
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                               text=True).stdout
        print(f"grading cost: {len(files)} hand-ins (the solution and {len(files) - 1} mutants), grade-all --jobs 1, "
              f"today {head.strip()}{' with uncommitted edits' if dirty else ''}"
              f"{''.join(f', {c}' for c in args.also)} against {args.old} (older), {args.pairs} rounds, "
              f"{os.cpu_count()} CPUs, load average {load_average()}", flush=True)
        names = list(codes)
        runs: dict[str, list[dict]] = {name: [] for name in names}
        for round_ in range(args.pairs):
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:  # each code first in turn
                result = graded(codes[name], work / "class", work / f"{name}.json")
                runs[name].append(result)
                flag = "" if result["rc"] == 0 else f"   (exit status {result['rc']}: {result['stderr'][-300:]!r})"
                print(f"  round {round_ + 1} {name:<8} wall {result['wall']:7.1f} s   CPU {result['cpu']:7.1f} s   "
                      f"load {result['load']}{flag}", flush=True)
        median = {name: {key: statistics.median(r[key] for r in rs) for key in ("wall", "cpu")}
                  for name, rs in runs.items()}
        print()
        for name in names:
            print(f"  {name:<8} median wall {median[name]['wall']:7.1f} s   median CPU {median[name]['cpu']:7.1f} s")
        older_ids = catalog_ids(args.old)
        figures = {}
        for name in names:
            if name == "older":
                continue
            wall_ratio = median[name]["wall"] / median["older"]["wall"]
            cpu_ratio = median[name]["cpu"] / median["older"]["cpu"]
            differences = score_differences(runs[name][-1]["reports"], runs["older"][-1]["reports"], older_ids,
                                            (name, args.old))
            figures[name] = {"wall_ratio": wall_ratio, "cpu_ratio": cpu_ratio, "differences": differences}
            print(f"  ratio {name} / {args.old}: wall {wall_ratio:.2f}, CPU {cpu_ratio:.2f}; every score equal: "
                  f"{'yes' if not differences else 'no'} ({len(files) - len(differences)}/{len(files)} equal)")
            for line in differences:
                print(f"    {line}")
        for name in args.also:
            same = score_differences(runs["today"][-1]["reports"], runs[name][-1]["reports"], set(), ("today", name))
            print(f"  scores of today equal to {name}'s: {'yes' if not same else 'no'} "
                  f"({len(files) - len(same)}/{len(files)} equal)")
            for line in same:
                print(f"    {line}")
        unstable = [name for name, rs in runs.items()
                    if any({k: r["score"] for k, r in x["reports"].items()}
                           != {k: r["score"] for k, r in rs[0]["reports"].items()} for x in rs)]
        if unstable:
            print(f"  scores moved between runs of: {', '.join(unstable)}")
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(
                {"old": args.old, "hand_ins": len(files), "ratios": figures,
                 "runs": {n: [{k: r[k] for k in ("wall", "cpu", "load", "rc")} for r in rs] for n, rs in runs.items()}},
                indent=1))
    finally:
        for name, tree in codes.items():
            if name != "today":
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
