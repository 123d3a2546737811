"""How fast a class is graded, measured several ways in one run on one synthetic class.

A class of N notebooks: the release notebook with its two solution cells answered by the reference
solution and by the mutants of tests/submissions/mutants/ (each one classic mistake), cycled, as
nbgrader's `submitted/<student>/attention/attention.ipynb`. Then, one after another, each method's
wall time, time per notebook, ratio to the floor below, and peak memory:

- `floor`:    N plain `python -c "import torch"` processes one after another: what any design that
              starts one interpreter per submission pays before grading anything;
- `stock`:    stock `nbgrader autograde` (nbgrader's default Execute pipeline, a course config
              without the kit's grading step): one fresh kernel per notebook runs the whole
              notebook, its hidden test cells included (they call `grader.hidden.score_part`);
- `jobs1`, `jobs2`: `python -m grader grade-all submitted --jobs 1|2` (the whole command: start-up,
              torch import, every report);
- `nbgrader`: `python -m grader grade-all COURSE --nbgrader attention --jobs 2` on a fresh course:
              the kit's nbgrader path, gradebook written (phases printed separately);
- `kit`:      the kit's `nbgrader autograde attention` alone, without grade-all first (one notebook
              after another inside nbgrader's process).

Memory: `tree PSS` is the peak of the summed proportional set size of the command's whole process
tree (parent, fork server, workers, kernels), sampled every 0.25 s; `max RSS` is the largest
resident size of any single process of it (getrusage of the children).

The mutants that attack the machine rather than the grader (memory-limit: 64 GiB; timeout: loops
forever; tampering: os._exit) are left out of the class: in the unconfined kernels of stock
nbgrader they would take the shared machine's memory or hang until nbgrader's cell timeout.

    .venv/bin/python benchmarks/grading_speed.py -n 40
    .venv/bin/python benchmarks/grading_speed.py -n 200 --methods floor,jobs1,jobs2,nbgrader,stock
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.demo import class_notebooks as cn  # noqa: E402
from grader.build.config import ASSIGNMENT, SOURCE_NOTEBOOK  # noqa: E402
from grader.process import nbgrader_env, open_gradebook, put_nbgrader_tools_on_path  # noqa: E402

MUTANTS = ROOT / "tests" / "submissions" / "mutants"
REFERENCE = ROOT / "solutions" / ASSIGNMENT / "attention.py"
LEFT_OUT = {"memory-limit", "timeout", "timeout__2", "tampering"}
METHODS = ("floor", "stock", "jobs1", "jobs2", "nbgrader", "kit")
STOCK_CONFIG = """# stock nbgrader: the default Autograde pipeline (Execute runs each notebook in a fresh kernel)
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "attention-kit-stock"
c.ClearSolutions.code_stub = {{"python": "# 你的代码 / YOUR CODE HERE\\nraise NotImplementedError()"}}
"""


# --- the synthetic class ---------------------------------------------------------------------------


def nbgrader(cwd: Path, course: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}", "--log-level=ERROR"]
    return subprocess.run(command, cwd=cwd, env=nbgrader_env(), capture_output=True, text=True)


def new_course(folder: Path, stock: bool) -> Path:
    """A course with the assignment released and recorded in its gradebook; the kit's config, or stock nbgrader's."""
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / SOURCE_NOTEBOOK, folder / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    if stock:
        (folder / "nbgrader_config.py").write_text(STOCK_CONFIG.format(root=str(folder)), encoding="utf-8")
    done = nbgrader(folder if stock else ROOT, folder, "generate_assignment", ASSIGNMENT, "--force")
    if done.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment failed:\n{done.stdout}{done.stderr}")
    return folder


def answers(path: Path) -> dict[str, str]:
    """The two solution cells from a .py submission; one that does not parse is cut as text, at its class."""
    try:
        return cn.answers_from_python(path)
    except SyntaxError:
        text = path.read_text(encoding="utf-8")
        cut = text.find("\nclass MultiHeadAttention")
        cut = len(text) if cut < 0 else cut + 1
        return {"sdpa": text[:cut], "mha": text[cut:]}


def class_files() -> list[Path]:
    return [REFERENCE] + [p for p in sorted(MUTANTS.glob("*.py")) if p.stem not in LEFT_OUT]


def write_class(course: Path, n: int) -> list[str]:
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    files = class_files()
    cells = {path: answers(path) for path in files}
    students = []
    for i in range(n):
        path = files[i % len(files)]
        student = f"s{i:03d}-{path.stem}"
        cn.write(cn.answered(release, cells[path]), course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        students.append(student)
    return students


# --- measuring -------------------------------------------------------------------------------------


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def pss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """The peak summed PSS of a process and all its descendants."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.peak, self.done = pid, every, 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.every):
            self.peak = max(self.peak, sum(pss_bytes(p) for p in descendants(self.pid)))


def measured(command: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Wall time, exit status, output and memory of one command (run in a child that reports its own children)."""
    probe = ("import json, resource, subprocess, sys, time\n"
             "started = time.perf_counter()\n"
             "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "wall = time.perf_counter() - started\n"
             "print(json.dumps({'wall': wall, 'rc': done.returncode, 'stdout': done.stdout[-20000:],"
             " 'stderr': done.stderr[-20000:],"
             " 'max_rss': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))\n")
    process = subprocess.Popen([sys.executable, "-c", probe, *command], cwd=cwd, env=env or nbgrader_env(),
                               stdout=subprocess.PIPE, text=True)
    sampler = TreeSampler(process.pid)
    sampler.start()
    out, _ = process.communicate()
    sampler.done.set()
    sampler.join()
    result = json.loads(out)
    result["tree_pss"] = sampler.peak
    return result


def floor(n: int) -> dict:
    """N plain interpreters importing torch, one after another (driven by one small interpreter)."""
    loop = f"import subprocess, sys\nfor _ in range({n}):\n    subprocess.run([sys.executable, '-c', 'import torch'], check=True)\n"
    return measured([sys.executable, "-c", loop], ROOT)


def gradebook_scores(course: Path, course_id: str, students: list[str]) -> dict[str, float | None]:
    from nbgrader.api import MissingEntry

    put_nbgrader_tools_on_path()  # this script is an entry point: the Gradebook may run `alembic`
    found = {}
    with open_gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id) as gradebook:
        for student in students:
            try:
                found[student] = gradebook.find_submission(ASSIGNMENT, student).score
            except MissingEntry:
                found[student] = None
    return found


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


# --- the run ---------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=40, help="notebooks in the class (default 40)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    parser.add_argument("--keep", metavar="DIR", help="build the courses in DIR and keep them")
    parser.add_argument("--json", dest="json_out", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        parser.error(f"unknown methods: {', '.join(sorted(unknown))}")

    work = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="grading-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    env_no_cache = {k: v for k, v in nbgrader_env().items() if k != "ATTENTION_KIT_REPORT_CACHE"}
    print(f"grading speed: N={args.n} notebooks ({len(class_files())} distinct: the solution and the mutants, cycled), "
          f"{os.cpu_count()} CPUs, load average {load_average()}, in {work}", flush=True)
    try:
        kit = new_course(work / "kit", stock=False)
        students = write_class(kit, args.n)
        results: dict[str, dict] = {}
        for method in methods:
            before = load_average()
            if method == "floor":
                result = floor(args.n)
            elif method in ("jobs1", "jobs2"):
                out = work / f"{method}.json"
                result = measured([sys.executable, "-m", "grader", "grade-all", str(kit / "submitted"), "--jobs",
                                   method[-1], "--json", str(out)], ROOT, env_no_cache)
                reports = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []
                result["scores"] = {r["student"]: r["score"] for r in reports}
            elif method == "nbgrader":
                course = work / "kit-nbgrader"
                shutil.rmtree(course, ignore_errors=True)
                shutil.copytree(kit, course)
                result = measured([sys.executable, "-m", "grader", "grade-all", str(course), "--nbgrader", ASSIGNMENT,
                                   "--jobs", "2"], ROOT, env_no_cache)
                result["scores"] = gradebook_scores(course, "attention-kit", students)
                phases = re.findall(r"graded in ([\d.]+) s|autograde took ([\d.]+) s", result["stderr"])
                result["phases"] = [float(a or b) for a, b in phases]
            elif method == "kit":
                course = work / "kit-alone"
                shutil.rmtree(course, ignore_errors=True)
                shutil.copytree(kit, course)
                result = measured([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT,
                                   f"--CourseDirectory.root={course}", "--log-level=ERROR"], ROOT, env_no_cache)
                result["scores"] = gradebook_scores(course, "attention-kit", students)
            else:  # stock
                course = new_course(work / "stock", stock=True)
                shutil.copytree(kit / "submitted", course / "submitted")
                result = measured([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--log-level=ERROR"],
                                  course, env_no_cache)
                result["scores"] = gradebook_scores(course, "attention-kit-stock", students)
            result["load"] = f"{before} -> {load_average()}"
            results[method] = result
            flag = "" if result["rc"] == 0 else f"   (exit status {result['rc']}: {result['stderr'][-300:]!r})"
            print(f"  {method:<9} {result['wall']:8.1f} s   load {result['load']}{flag}", flush=True)
        report(args.n, results)
        if args.json_out:
            keep = ("wall", "rc", "max_rss", "tree_pss", "load", "phases")
            Path(args.json_out).write_text(json.dumps(
                {"n": args.n, "cpus": os.cpu_count(),
                 "methods": {m: {k: r[k] for k in keep if k in r} for m, r in results.items()}}, indent=1))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


LABELS = {
    "floor": 'N x python -c "import torch"',
    "stock": "stock nbgrader autograde",
    "jobs1": "grade-all --jobs 1",
    "jobs2": "grade-all --jobs 2",
    "nbgrader": "grade-all --nbgrader --jobs 2",
    "kit": "kit's nbgrader autograde alone",
}


def report(n: int, results: dict[str, dict]) -> None:
    mib = 1 << 20
    floor_wall = results.get("floor", {}).get("wall")
    print()
    print(f"{'method':<32}{'wall s':>9}{'s/notebook':>12}{'/ floor':>9}{'tree PSS MiB':>14}{'max RSS MiB':>13}")
    for method, r in results.items():
        ratio = f"{r['wall'] / floor_wall:9.2f}" if floor_wall else f"{'':9}"
        pss = f"{r['tree_pss'] / mib:14.0f}" if r["tree_pss"] else f"{'':14}"
        print(f"{LABELS[method]:<32}{r['wall']:9.1f}{r['wall'] / n:12.3f}{ratio}{pss}{r['max_rss'] / mib:13.0f}")
    if "nbgrader" in results and len(results["nbgrader"].get("phases", [])) == 2:
        graded, autograde = results["nbgrader"]["phases"]
        print(f"  grade-all --nbgrader: {graded:.1f} s grading in parallel, {autograde:.1f} s in `nbgrader autograde` "
              f"(writing the gradebook, verdicts from the cache)")
    print()
    walls = {m: r["wall"] for m, r in results.items()}
    for a, b in (("stock", "jobs2"), ("stock", "jobs1"), ("jobs1", "jobs2"), ("stock", "nbgrader"), ("kit", "nbgrader")):
        if a in walls and b in walls:
            print(f"  {LABELS[a]} / {LABELS[b]} = {walls[a] / walls[b]:.2f}")
    scored = {m: r["scores"] for m, r in results.items() if "scores" in r}
    if "jobs1" in scored:
        for method, scores in scored.items():
            if method != "jobs1":
                same = sum(scores.get(s) == score for s, score in scored["jobs1"].items())
                print(f"  scores equal to grade-all --jobs 1: {LABELS[method]} {same}/{len(scored['jobs1'])}")
    if floor_wall and "jobs2" in walls:
        share = walls["jobs2"] / floor_wall
        verdict = "met" if share <= 0.5 else "NOT met"
        print(f"\nacceptance: grade-all --jobs 2 took {share:.2f} x the time of {n} plain `import torch` processes "
              f"(at most 0.5 required): {verdict}")


if __name__ == "__main__":
    sys.exit(main())
