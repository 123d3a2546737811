"""`python -m grader grade-all DIR`: grade a whole class, in parallel, each submission isolated.

Submissions are graded by a thread pool of `--jobs` threads in this one process; each submission
runs in its own confined worker forked from the one fork server that imported torch once
(grader.sandbox), so a submission costs a fork, not an interpreter and a torch import. Every
verdict is computed here, in the trusted parent, from seeded inputs, so results do not depend on
`--jobs` or on the order submissions finish in. Every submission gets a row, whatever it does,
even when the grader itself fails on it (the row then carries an `error`).

Two modes:

- `grade-all DIR`: DIR holds one `.ipynb` or `.py` per student, in `DIR/<student>/...` or
  directly in DIR. Prints a table, then a class summary (score distribution, the mistakes to
  re-teach); `--json OUT` writes the reports as a JSON list.
- `grade-all COURSE --nbgrader ASSIGNMENT`: COURSE is an nbgrader course directory (the repo root
  for the instructor). The notebooks in `submitted/*/ASSIGNMENT/` go through nbgrader's own
  sanitize pass (the course's configuration, in this process, read-only), are graded in parallel
  into the report cache (grader.report_cache) in `autograded/.attention-kit-report-cache/`, then ONE
  `nbgrader autograde ASSIGNMENT` runs: its grading step finds every verdict in the cache, so the
  gradebook has a single writer (no SQLite races) and takes seconds, and nbgrader's feedback
  works as usual. `--db-url` points both at a shared gradebook (PostgreSQL) and `--shard K/N`
  takes one disjoint share of the students, for a class graded by several machines.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from grader.clean_text import printable

# No torch (nor grader.grade) at import time: grader.cli imports this module to build its parser,
# and the fork server must start before torch loads in this process.

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = (".ipynb", ".py")
CACHE_FOLDER = ".attention-kit-report-cache"
"""The report cache of `--nbgrader`, inside the course's autograded/ folder (git-ignored; a dot-name,
so nbgrader never takes it for a student)."""
NBGRADER_LOG_LEVEL = re.compile(r"\[\w+ \| (DEBUG|INFO|WARNING|ERROR|CRITICAL)\]")
"""How nbgrader starts a log line: `[AutogradeApp | WARNING] ...`."""
DB_URL_ENV = "ATTENTION_KIT_DB_URL"
"""The gradebook's URL, which may hold a password, travels in this environment variable: every user can
read a process's command line in /proc, only its owner its environment. grade-all reads it when
--db-url is not given and hands it to its `nbgrader autograde` child this way; nbgrader_config.py reads it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """grade-all's options (grader.cli calls this to build the verb's parser)."""
    parser.add_argument("dir", help="a folder of submissions; with --nbgrader, the nbgrader course directory")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--json", dest="json_out", metavar="OUT", help="write the reports as a JSON list to OUT")
    parser.add_argument("--lang", choices=["zh", "en"], default="zh",
                        help="language of the messages and the class summary: zh (default) or en")
    course = parser.add_argument_group("nbgrader course")
    course.add_argument("--nbgrader", metavar="ASSIGNMENT",
                        help="grade the course's submitted/*/ASSIGNMENT/*.ipynb in parallel, then run "
                             "`nbgrader autograde ASSIGNMENT` once, which reuses every verdict")
    course.add_argument("--db-url", help="the gradebook's SQLAlchemy URL (default: $" + DB_URL_ENV + ", else the "
                                         "course's config, else COURSE/gradebook.db), e.g. "
                                         "postgresql+psycopg2://user@host/gradebook; one with a password belongs in "
                                         "$" + DB_URL_ENV + " or --db-url-file, since a command line is public")
    course.add_argument("--db-url-file", metavar="FILE", help="read the gradebook's URL from FILE (mode 0600)")
    course.add_argument("--shard", type=parse_shard, metavar="K/N",
                        help="grade only the students of share K of N (by a hash of the student id)")
    course.add_argument("--force", action="store_true",
                        help="let nbgrader autograde again students it has autograded before")


def parse_shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard wants K/N, got {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--shard {text}: K must be between 1 and N")
    return k, n


def in_shard(student: str, shard: tuple[int, int] | None) -> bool:
    """Stable across machines and runs: the same student always falls in the same share."""
    if shard is None:
        return True
    k, n = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % n == k - 1


# --- grading many submissions ----------------------------------------------------------------------


def single_threaded_torch() -> None:
    """Grading's own tensor work (float64 references, comparisons, decoding answers) is on tiny
    tensors, where torch's intra-op threads only add wake-up latency to every op, and much more on
    a busy machine (a 16x16 triu: 30 us with one thread, 8 ms with two on a loaded 2-core box; a
    submission's parent-side time went from 1.4 s to 0.3 s). --jobs gives the parallelism instead,
    across submissions. Tiny tensors are never split across threads, so no result changes.
    OpenMP keeps the setting per thread: each grading thread calls this."""
    import torch

    torch.set_num_threads(1)


def in_parallel(work: Callable, items: Iterable, total: int, jobs: int, progress: bool, unit: str) -> list:
    """work(item) for every item, `jobs` at a time; results in the items' order (never the order
    they finish in). `items` may be a generator doing work of its own (nbgrader's sanitize pass)
    in this thread while earlier items are graded."""
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit=unit, desc="grading", file=sys.stderr, dynamic_ncols=True)
    futures: list[Future] = []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grade-all", initializer=single_threaded_torch)
    try:
        for item in items:
            future = pool.submit(work, item)
            if bar is not None:
                future.add_done_callback(lambda _: bar.update(1))
            futures.append(future)
        results = [future.result() for future in futures]
    except BaseException:  # Ctrl-C: drop what has not started (running workers end with their probes' limits)
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    pool.shutdown()
    return results


def failed_report(error: BaseException, stage: str) -> dict:
    """The row of a submission the grader could not grade (unreadable file, grader bug): 0 points."""
    from grader.checks import checks_for

    return {"score": 0.0, "max_score": float(sum(c.points for c in checks_for())), "checks": [], "mistakes": [],
            "advice": [], "error": f"{stage}: {type(error).__name__}: {error}"}


def grade_one(student: str, path: Path, folder: Path) -> dict:
    """`folder`: the student's own folder, which the submission may not leave through a link."""
    from grader.grade import grade_submission

    try:
        report = grade_submission(path, folder=folder)
    except Exception as error:  # a grader bug: still a row
        report = failed_report(error, "grading failed")
    return {"submission": str(path), "student": student, **report}


def student_of_file(name: str) -> str:
    """A file directly in DIR is named like a Colab download for zip_collect, `<student_id>_<any name>`,
    and read by the collector's rule; a name without an id is the student's name (its stem)."""
    from grader.nbgrader_plugins.collector import STUDENT_ID

    match = STUDENT_ID.match(name)
    return match.group("student_id") if match else Path(name).stem


def find_submissions(root: Path) -> list[tuple[str, Path]]:
    """(student, file) pairs: files directly in DIR are students of their own; in DIR/<student>/…
    the student's notebook is taken (else a .py), whatever it is called.

    No link is followed: a link is listed as it is (a file link, or a linked folder when the student has
    nothing else), so reading refuses it and the student's row says so; nothing it points at is read."""
    found = []
    for entry in sorted(root.iterdir()):
        if entry.is_symlink():
            if entry.suffix in SUFFIXES:
                found.append((student_of_file(entry.name), entry))
            elif entry.is_dir() and not entry.name.startswith("."):
                found.append((entry.name, entry))
        elif entry.is_dir():
            chosen = None if entry.name.startswith(".") else submission_in(entry)
            if chosen is not None:
                found.append((entry.name, chosen))
        elif entry.suffix in SUFFIXES:
            found.append((student_of_file(entry.name), entry))
    return found


def submission_in(folder: Path) -> Path | None:
    """A student's notebook (else a .py, else a linked folder), walking the folder without entering links."""
    files, linked_folders = [], []
    for parent, dirs, names in os.walk(folder):  # never descends into a linked folder
        parent = Path(parent)
        linked_folders += [parent / d for d in dirs if (parent / d).is_symlink() and not d.startswith(".")]
        dirs[:] = [d for d in dirs if d != ".ipynb_checkpoints"]
        files += [parent / name for name in names if Path(name).suffix in SUFFIXES]
    files.sort()
    notebooks = [p for p in files if p.suffix == ".ipynb"]
    return (notebooks or files or sorted(linked_folders) or [None])[0]


def student_folder(root: Path, path: Path) -> Path:
    """The folder a submission belongs to: DIR/<student>, or DIR for a file directly in it."""
    parts = path.relative_to(root).parts
    return root / parts[0] if len(parts) > 1 else root


def grade_class(root: Path, jobs: int = 1, progress: bool = False) -> list[dict]:
    """One language-neutral report per submission under `root`, in the order of `find_submissions`."""
    submissions = find_submissions(root)
    return in_parallel(lambda item: grade_one(*item, student_folder(root, item[1])), submissions,
                       len(submissions), jobs, progress, "submission")


# --- the class summary -----------------------------------------------------------------------------


def class_summary(reports: list[dict], lang: str) -> str:
    """Score distribution, then what to re-teach: the most frequent mistakes (and, apart, the advice that
    cost no point) and the checks failed most often."""
    from grader.catalog import catalog

    zh = lang == "zh"
    lines = [f"{'提交数' if zh else 'Submissions'}: {len(reports)}"]
    if not reports:
        return lines[0]
    scores = [r["score"] for r in reports]
    top = max(r["max_score"] for r in reports) or 20.0
    lines.append(f"{'平均分' if zh else 'Mean'}: {statistics.mean(scores):.2f} / {top:g}   "
                 f"{'中位数' if zh else 'Median'}: {statistics.median(scores):g}   "
                 f"{'满分' if zh else 'Full marks'}: {sum(s >= top for s in scores)}   "
                 f"{'零分' if zh else 'Zero'}: {sum(s == 0 for s in scores)}")
    parts = {}
    for report in reports:
        for check in report["checks"]:
            got, most = parts.get(check["part"], (0.0, 0.0))
            parts[check["part"]] = (got + check["points"], most + check["max_points"])
    if parts:
        lines.append(("各部分得分率" if zh else "Per part") + ": " + "   ".join(
            f"{part} {100 * got / most:.0f}%" for part, (got, most) in parts.items() if most))
    lines.append("分数分布:" if zh else "Score distribution:")
    bins = Counter(min(int(s / top * 5), 4) for s in scores)
    width = max(bins.values())
    for b in range(5):
        low, high = b * top / 5, (b + 1) * top / 5
        bar = "#" * round(40 * bins[b] / width) if bins[b] else ""
        lines.append(f"  [{low:4g}, {high:4g}{']' if b == 4 else ')'} {bins[b]:4d} {bar}")
    known = catalog()
    for key, heading_zh, heading_en in (
            ("mistakes", "最常见的错误（建议重讲）:", "Most frequent mistakes (worth re-teaching):"),
            ("advice", "最常见的建议（不扣分）:", "Most frequent advice (no points lost):")):
        counts = Counter(m for r in reports for m in r.get(key, []))
        if counts:
            lines.append(heading_zh if zh else heading_en)
        for mistake, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]:
            title = known.get(mistake, {}).get("title_zh" if zh else "title_en", "")
            lines.append(f"  {count:4d} {100 * count / len(reports):4.0f}%  {mistake:<20} {title}")
    failed = Counter((c["id"], c.get("title_zh" if zh else "title_en", "")) for r in reports for c in r["checks"]
                     if not c["passed"])
    if failed:
        lines.append("最常失败的检查:" if zh else "Checks failed most often:")
        for (check, title), count in sorted(failed.items(), key=lambda item: (-item[1], item[0]))[:8]:
            lines.append(f"  {count:4d} {100 * count / len(reports):4.0f}%  {check:<24} {title}")
    refused = [r for r in reports if r.get("refused")]
    if refused:
        lines.append(f"{'未评分（提交被拒绝）' if zh else 'Not graded (hand-in refused)'} ({len(refused)}):")
        for r in refused:
            title = known.get(r["refused"], {}).get("title_zh" if zh else "title_en", "")
            lines.append(f"  {printable(r['student'], keep_newlines=False)}: {title} ({r['refused']})")
    lines += rule_breakers(reports, zh)
    errors = [r for r in reports if r.get("error")]
    if errors:
        lines.append(f"{'评分程序无法评分' if zh else 'Could not be graded'} ({len(errors)}):")
        lines += [f"  {printable(r['student'], keep_newlines=False)}: {r['error']}" for r in errors]
    incomplete = [r["student"] for r in reports if r.get("isolation_missing")]
    if incomplete:
        lines.append(f"{'隔离不完整' if zh else 'Graded with incomplete isolation'}: {', '.join(incomplete)}")
    return printable("\n".join(lines))  # student names are file names, errors may quote them


def rule_breakers(reports: list[dict], zh: bool) -> list[str]:
    """Tampering and broken grading rules, by student: they score 0 on the part, and need a person."""
    from grader.policy import RULE_MISTAKES

    flagged = [(r.get("student", "?"), [m for m in r["mistakes"] if m in RULE_MISTAKES]) for r in reports]
    flagged = [(student, ids) for student, ids in flagged if ids]
    if not flagged:
        return []
    heading = "篡改或违反评分规则（请老师跟进）" if zh else "Tampering or broken grading rules (follow up)"
    return [f"{heading} ({len(flagged)}):"] + [f"  {student}: {', '.join(ids)}" for student, ids in flagged]


def write_reports(path: str, reports: list[dict], lang: str) -> None:
    """The JSON list `--json OUT`: each report as `grade --json` prints it, in `lang`."""
    from grader.report import in_language

    Path(path).write_text(json.dumps([in_language(r, lang) for r in reports], ensure_ascii=False, indent=1),
                          encoding="utf-8")


def table(reports: list[dict], gradebook: dict[str, tuple[float, float] | None] | None = None) -> str:
    width = max([len(r["student"]) for r in reports] + [8])
    rows = []
    for r in reports:
        row = f"{printable(r['student'], keep_newlines=False):<{width}} {r['score']:5g} / {r['max_score']:g}"
        if gradebook is not None:
            entry = gradebook.get(r["student"])
            row += f"   gradebook {'—' if entry is None else f'{entry[0]:g} / {entry[1]:g}':>9}"
            row += "" if agrees(r, entry) else " ≠"
        note = ", ".join(r["mistakes"]) + (f"  [{r['error']}]" if r.get("error") else "")
        rows.append(f"{row}  {note}".rstrip())
    return printable("\n".join(rows))


# --- the nbgrader course ---------------------------------------------------------------------------


@dataclass
class Course:
    """An nbgrader course seen through its own configuration (the repo's nbgrader_config.py, and the
    course root's), exactly as `nbgrader autograde` sees it, used read-only: nbgrader's sanitize
    pass, then the course's autograde steps up to the kit's grading step (GradeWithHiddenGraders),
    run here on each notebook, so the report cache gets exactly the entries that step will look up."""

    root: Path
    assignment: str
    overrides: list[str]  # nbgrader command-line options both passes get (never a secret: see DB_URL_ENV)
    converter: object  # nbgrader.converters.Autograde, set up for its sanitize pass
    grading_steps: list  # autograde_preprocessors up to the grading step, instantiated
    db_url: str | None = None  # the gradebook, when not the course's configured one

    @classmethod
    def open(cls, root: Path, assignment: str, db_url: str | None) -> "Course":
        from nbgrader.apps.autogradeapp import AutogradeApp
        from nbgrader.converters import Autograde
        from traitlets.utils.importstring import import_item

        from grader.nbgrader_plugins.grade_with_hidden_graders import GradeWithHiddenGraders

        overrides = [f"--CourseDirectory.root={root}"]
        app = AutogradeApp()
        here = os.getcwd()
        os.chdir(ROOT)  # nbgrader reads nbgrader_config.py from the working directory, as the kit runs it
        try:  # in this process, an argument list is no command line: the URL may go here
            app.initialize([assignment, *overrides, *([f"--CourseDirectory.db_url={db_url}"] if db_url else []),
                            "--log-level=ERROR"])  # the nbgrader run logs what matters
        finally:
            os.chdir(here)
        app.coursedir.assignment_id = assignment
        converter = Autograde(coursedir=app.coursedir, parent=app)
        converter.exporter = converter.exporter_class(parent=converter, config=converter.config)
        converter._sanitizing = True  # nbgrader's own switch between its two passes
        converter._init_preprocessors()
        steps = []
        for step in converter.autograde_preprocessors:
            step = import_item(step) if isinstance(step, str) else step
            steps.append(step(parent=converter))
            if issubclass(step, GradeWithHiddenGraders):
                break
        else:
            raise CourseError("the course's Autograde.autograde_preprocessors have no GradeWithHiddenGraders step "
                              "(nbgrader_config.py), so nbgrader would not use the hidden graders' verdicts")
        return cls(root, assignment, overrides, converter, steps, db_url)

    @property
    def coursedir(self):
        return self.converter.coursedir

    def gradebook(self):
        os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        from nbgrader.api import Gradebook  # it runs `alembic` through PATH when it creates a database

        return Gradebook(self.coursedir.db_url, self.coursedir.course_id)

    def notebooks(self) -> list[tuple[str, Path]]:
        """(student, notebook) for each submitted notebook nbgrader would grade (known to the gradebook)."""
        from nbgrader.converters.base import NbGraderException

        from nbgrader.api import MissingEntry

        with self.gradebook() as gb:
            try:
                known = {notebook.name for notebook in gb.find_assignment(self.assignment).notebooks}
            except MissingEntry:
                raise CourseError(f"the gradebook ({self.coursedir.db_url}) has no assignment {self.assignment!r}: "
                                  "record it first (`make build`, or nbgrader generate_assignment with this "
                                  "db_url, see README)") from None
        try:
            self.converter.init_notebooks()
        except NbGraderException:
            return []
        found = []
        for folder, paths in sorted(self.converter.assignments.items()):
            student = Path(folder).parent.name
            found += [(student, Path(p)) for p in sorted(paths) if Path(p).stem in known]
        return found

    def sanitized(self, path: Path) -> tuple[object, dict]:
        """nbgrader's sanitize pass (the course's sanitize_preprocessors: the kit's Colab repairs,
        OverwriteCells, ...) on one submitted notebook, in memory: what autograde's second pass reads."""
        import nbformat

        output, _ = self.converter.exporter.from_filename(
            str(path), resources=self.converter.init_single_notebook_resources(str(path)))
        return nbformat.reads(output, as_version=4), self.converter.init_single_notebook_resources(str(path))

    def graded(self, nb, resources: dict) -> dict:
        """The second pass up to the grading step; the step grades through grader.grade.grade (so the
        verdict lands in the report cache) and keeps the report in the notebook's metadata."""
        from grader.nbgrader_plugins.release_cells import kit_metadata

        for step in self.grading_steps:
            nb, resources = step(nb, resources)
        report = kit_metadata(nb).get("report")
        if not isinstance(report, dict):
            raise CourseError("the grading step left no report in the notebook's metadata (attention_kit.report)")
        return report

    def would_autograde(self, student: str) -> bool:
        """nbgrader's own rule (BaseConverter.init_destination), read-only: not yet autograded, --force,
        or a newer submission."""
        if self.converter.force:
            return True
        dest = Path(self.converter._format_dest(self.assignment, student))
        if not dest.exists():
            return True
        new = self.coursedir.get_existing_timestamp(self.converter._format_source(self.assignment, student))
        old = self.coursedir.get_existing_timestamp(str(dest))
        return bool(new and old and new > old)

    def autograde_invocation(self, cache: Path, excluded: list[str], force: bool) -> tuple[list[str], dict[str, str]]:
        """The command line and environment of the `nbgrader autograde` child. The gradebook's URL goes in
        the environment (DB_URL_ENV, which nbgrader_config.py reads), never on the command line."""
        command = [sys.executable, "-m", "nbgrader", "autograde", self.assignment, *self.overrides, "--log-level=INFO"]
        if excluded:
            command.append(f"--CourseDirectory.student_id_exclude={','.join(excluded)}")
        if force:
            command.append("--force")
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               "ATTENTION_KIT_REPORT_CACHE": str(cache), "PYTHONUNBUFFERED": "1",
               # should it grade a notebook itself (not in the cache): see single_threaded_torch
               "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        if self.db_url:
            env[DB_URL_ENV] = self.db_url
        return command, env

    def autograde(self, cache: Path, excluded: list[str], force: bool, log_path: Path, total: int,
                  progress: bool) -> int:
        """The one `nbgrader autograde` run, the gradebook's only writer. Its whole log goes to
        `log_path`; errors (with their tracebacks) are echoed to stderr; a progress bar counts notebooks."""
        command, env = self.autograde_invocation(cache, excluded, force)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="notebook", desc="nbgrader autograde", file=sys.stderr, dynamic_ncols=True)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        echoing = False
        with open(log_path, "w", encoding="utf-8") as log, subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                encoding="utf-8", errors="replace") as process:
            for line in process.stdout:
                line = printable(line)  # nbgrader logs file names and cell metadata a student wrote
                log.write(line)
                level = NBGRADER_LOG_LEVEL.match(line)
                if level:
                    echoing = level.group(1) in ("ERROR", "CRITICAL")
                    if bar is not None and level.group(1) == "INFO" and " Autograding " in line:
                        bar.update(1)
                if echoing and bar is not None:
                    bar.write(line.rstrip("\n"), file=sys.stderr)
                elif echoing:
                    sys.stderr.write(line)
            status = process.wait()
        if bar is not None:
            bar.close()
        return status

    def scores(self, students: list[str]) -> dict[str, tuple[float, float] | None]:
        from nbgrader.api import MissingEntry

        found: dict[str, tuple[float, float] | None] = {}
        with self.gradebook() as gb:
            for student in students:
                try:
                    submission = gb.find_submission(self.assignment, student)
                    found[student] = (float(submission.score), float(submission.max_score))
                except MissingEntry:
                    found[student] = None
        return found


class CourseError(Exception):
    """The course cannot be graded this way; the message says why."""


def agrees(report: dict, entry: tuple[float, float] | None) -> bool:
    """The gradebook's total says what the report says (scaled if the notebook's points differ)."""
    if entry is None:
        return False
    score, maximum = entry
    expected = report["score"] * maximum / report["max_score"] if report["max_score"] else 0.0
    return abs(score - expected) < 1e-3


def grade_course(course: Course, jobs: int, shard: tuple[int, int] | None,
                 progress: bool) -> tuple[list[dict], list[str]]:
    """Sanitize (this thread) and grade (the pool) every notebook of the shard into the cache.
    Returns the reports and the students of the course outside the shard."""
    notebooks = course.notebooks()
    mine = [(s, p) for s, p in notebooks if in_shard(s, shard)]
    others = sorted({s for s, _ in notebooks} - {s for s, _ in mine})

    def sanitized() -> Iterator[tuple[str, Path, tuple | Exception]]:
        for student, path in mine:
            try:
                yield student, path, course.sanitized(path)
            except Exception as error:  # nbgrader fails on it too: the row says why
                yield student, path, error

    def work(item: tuple[str, Path, tuple | Exception]) -> dict:
        student, path, notebook = item
        if isinstance(notebook, Exception):
            report = failed_report(notebook, "nbgrader could not read it")
        else:
            try:
                report = course.graded(*notebook)
            except Exception as error:
                report = failed_report(error, "grading failed")
        return {"submission": str(path), "student": student, **report}

    reports = in_parallel(work, sanitized(), len(mine), jobs, progress, "notebook")
    return reports, others


@contextlib.contextmanager
def report_cache_at(folder: Path) -> Iterator[None]:
    """grader.grade stores (and finds) reports in `folder` meanwhile."""
    from grader.report_cache import CACHE_ENV

    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = previous


def main_nbgrader(course_dir: Path, assignment: str, *, jobs: int, json_out: str | None, lang: str,
                  db_url: str | None, shard: tuple[int, int] | None, force: bool) -> int:
    from grader.report_cache import CACHE_ENV

    try:
        course = Course.open(course_dir.resolve(), assignment, db_url)
    except CourseError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    course.converter.force = force
    autograded = Path(course.coursedir.format_path(course.coursedir.autograded_directory, ".", ".")).resolve()
    cache = Path(os.environ.get(CACHE_ENV) or autograded / CACHE_FOLDER)
    log_path = autograded / f".attention-kit-autograde-{assignment}.log"
    progress = sys.stderr.isatty()

    started = time.perf_counter()
    try:
        with report_cache_at(cache):
            reports, others = grade_course(course, jobs, shard, progress)
    except CourseError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    if not reports:
        print(f"grader: no submitted notebooks of {assignment!r} under {course.coursedir.root}"
              + (f" in shard {shard[0]}/{shard[1]}" if shard else ""), file=sys.stderr)
        return 2
    graded_at = time.perf_counter()
    print(f"grade-all: {len(reports)} notebooks graded in {graded_at - started:.1f} s (--jobs {jobs}); "
          f"now `nbgrader autograde {assignment}` writes the gradebook (log: {log_path})", file=sys.stderr)

    to_autograde = {r["student"] for r in reports if course.would_autograde(r["student"])}
    cached_before = set(os.listdir(cache)) if cache.is_dir() else set()
    status = course.autograde(cache, others, force, log_path, len(to_autograde), progress)
    misses = len(set(os.listdir(cache)) - cached_before) if cache.is_dir() else 0
    print(f"grade-all: nbgrader autograde took {time.perf_counter() - graded_at:.1f} s"
          + (f"; it graded {misses} notebook(s) itself (not found in the cache)" if misses else ""), file=sys.stderr)

    scores = course.scores([r["student"] for r in reports])
    for report in reports:
        entry = scores.get(report["student"])
        report["gradebook_score"], report["gradebook_max_score"] = entry if entry else (None, None)
    if json_out:
        write_reports(json_out, reports, lang)
    print(table(reports, scores))
    print()
    print(class_summary(reports, lang))
    if status != 0:
        print(f"grader: nbgrader autograde failed (exit status {status}); its log: {log_path}", file=sys.stderr)
        return status
    differing = [r["student"] for r in reports if not agrees(r, scores.get(r["student"]))]
    if differing:
        stale = [s for s in differing if s not in to_autograde]
        print(f"grader: the gradebook differs from grade-all for {', '.join(differing)}"
              + (f"; nbgrader kept its earlier grading of {', '.join(stale)} (add --force to grade again)"
                 if stale else ""), file=sys.stderr)
        return 1
    return 0


# --- the command -----------------------------------------------------------------------------------


def main(*, dir: str, jobs: int = 1, json_out: str | None = None, lang: str = "zh",  # noqa: A002 (CLI name)
         nbgrader: str | None = None, db_url: str | None = None, db_url_file: str | None = None,
         shard: tuple[int, int] | None = None, force: bool = False) -> int:
    root = Path(dir)
    if not root.is_dir():
        print(f"grader: no such directory: {dir}", file=sys.stderr)
        return 2
    if nbgrader:
        if db_url_file:
            db_url = Path(db_url_file).read_text(encoding="utf-8").strip()
        return main_nbgrader(root, nbgrader, jobs=jobs, json_out=json_out, lang=lang,
                             db_url=db_url or os.environ.get(DB_URL_ENV) or None, shard=shard, force=force)
    if db_url or db_url_file or shard or force:
        print("grader: --db-url, --db-url-file, --shard and --force go with --nbgrader ASSIGNMENT", file=sys.stderr)
        return 2
    reports = grade_class(root, jobs, progress=sys.stderr.isatty())
    if json_out:
        write_reports(json_out, reports, lang)
    if reports:
        print(table(reports))
        print()
    print(class_summary(reports, lang))
    return 0
