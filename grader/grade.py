"""`python -m grader grade PATH`: grade one submission and print its report."""
from __future__ import annotations

import json as json_module
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader import fixes, rules, static_pass
from grader.fixes import reach as edit_reach
from grader.handin import parent_budget
from grader.report import cache as report_cache
from grader.checks.student_code import StudentCode
from grader.checks import Check, Context, Outcome, checks_for
from grader.checks import secret as grading_secret
from grader.sandbox.confinement import Limits
from grader.errors import UsageError
from grader import exercises
from grader.exercises import Exercise
from grader.process import probe_seconds_from_env
from grader.report.json_report import build_report, refused_report, spliced
from grader.report.text import in_language, render_text
from grader.sandbox.worker_process import SandboxUnavailable, python_paths
from grader.handin.source import Refusal, Submission, load_submission


def default_limits() -> Limits:
    """The worker's limits for every entry point; the per-call time from $ATTENTION_KIT_PROBE_SECONDS when set."""
    return Limits(visible=python_paths(), probe_seconds=probe_seconds_from_env() or Limits.probe_seconds)


def integrity_check(student: StudentCode) -> tuple[Check, Outcome]:
    """Tampering changes no score (verdicts are computed here), but it is reported."""
    spec = Check("integrity.tampering", "integrity", 0.0, "hidden", "未篡改评分环境", "grading environment left intact",
                 lambda ctx: None)
    seen = sorted(student.tampered)
    if "exited" in student.failures:
        seen.append("process exit")
    if seen:
        outcome = Outcome(False, f"检测到对评分环境的修改：{', '.join(seen)}。这不会带来分数。",
                          f"Changes to the grading environment detected: {', '.join(seen)}. They earn nothing.",
                          ["tampering"])
    else:
        outcome = Outcome(True)
    return spec, outcome


def not_run(spec: Check, violations: list[rules.Violation], submission: Submission) -> Outcome:
    """A check of a part whose code breaks the rules: it is not run; the first breach says why
    (also where only the public checks run, without the rules gate)."""
    first = rules.for_part(violations, spec.part)[0]
    line = (submission.locate({"line": first.line, "text": first.text}) or {}).get("line", first.line)
    return Outcome(False, f"未运行：本部分的代码违反了评分规则（见 {spec.part}.rules），例如第 {line} 行：{first.zh}。",
                   f"Not run: this part's code breaks the grading rules (see {spec.part}.rules), e.g. line {line}: "
                   f"{first.en}.")


def grade_submission(path: str | Path, *, limits: Limits | None = None, cuda: bool | None = None,
                     checks: list[Check] | None = None, folder: Path | None = None, cache: Path | None = None,
                     fix_credit: float = 0.0, budget: parent_budget.ParentBudget | None = None,
                     exercise: Exercise | None = None) -> dict:
    """Every check on one submission file; a complete, language-neutral report whatever the submission does.
    `folder`: the student's own folder, which the path may not leave through a link. `budget`: what this
    process may spend on it (grader.handin.parent_budget), reading included. `exercise`: what it answers, where the
    verb was told (else its name and code say: grader.handin.exercise_of)."""
    with parent_budget.charged(budget):
        return grade(load_submission(path, folder=folder, exercise=exercise), limits=limits, cuda=cuda, checks=checks, cache=cache,
                     fix_credit=fix_credit)


def grade(submission: Submission, *, limits: Limits | None = None, cuda: bool | None = None,
          checks: list[Check] | None = None, cache: Path | None = None, fix_credit: float = 0.0) -> dict:
    """Every check (or the given ones) on one submission, in a confined worker: a language-neutral report
    (grader.report.text.in_language and render_text pick the language); then the verified fixes (grader.fixes),
    with `fix_credit` of the points they earn added to the score. `cache`: a report cache folder
    (grader.report.cache) to reuse and fill, for the submission and each fix's regrade alike; none by
    default. Changes nothing process-wide (torch's thread count is the entry point's:
    grader.process.single_threaded_torch)."""
    checks = checks if checks is not None else checks_for(exercise=submission.exercise)
    if submission.refusal is not None:  # nothing of it was parsed, nothing runs
        return fixes.unsearched(refused_report(submission.refusal, checks), fix_credit)
    use_cuda = torch.cuda.is_available() if cuda is None else cuda
    with parent_budget.charged():
        try:
            grading = Grading(submission, checks, limits or default_limits(), use_cuda, cache)
            return fixes.with_fixes(grading, grading.report(), fix_credit)
        except parent_budget.OverBudget as spent:  # as a timeout: 0 points and a row that says why
            return fixes.unsearched(refused_report(Refusal(spent.mistake, spent.zh, spent.en), checks), fix_credit)


@dataclass
class Grading:
    """One hand-in's grading, set up once: its checks, limits, device and report cache, and its static pass, read
    once. `report()` grades the hand-in; `regrade(copy)` grades an edited copy the same way. The fix search
    (grader.fixes) reaches grading only through `regrade`: it never calls back into `grade`."""

    submission: Submission
    checks: list[Check]
    limits: Limits
    use_cuda: bool
    cache: Path | None = None
    static: dict[str, list] = field(init=False)
    started: float | None = field(init=False, default=None)
    reported: dict | None = field(init=False, default=None)  # the hand-in's own report, once `report()` made it

    def __post_init__(self) -> None:
        self.static = static_pass.analyse(self.submission.source)  # the checks and the fix search both read it

    def left(self) -> float:
        """Seconds the hand-in has left of its one budget (`Limits.submission_seconds`), which its grading, its fix
        search and what the search looks behind share: a regrade gets what is left, not a clock of its own. The
        clock starts with `report()`, or with the first regrade of a grading that was never reported."""
        if self.started is None:
            self.started = time.monotonic()
        return self.limits.submission_seconds - (time.monotonic() - self.started)

    def report(self) -> dict:
        self.started = time.monotonic()
        self.reported = self._cached_report(self.submission, self.static)
        return self.reported

    def regrade(self, copy: Submission) -> dict:
        """An edited copy of the hand-in, graded with the same checks, limits, device and cache, in what the hand-in
        has left; `fixes.OutOfTime` where nothing is left, or where the regrade ran out of it (its report, cut
        short, is neither used nor kept). Only the checks of the parts the edit can reach run (grader.fixes.reach);
        the others' verdicts are the reported grading's."""
        if self.left() <= 0:
            raise fixes.OutOfTime()
        reached = edit_reach.parts_reached(self.submission.source, copy.source, self.submission.exercise.graded_name)
        run = [check for check in self.checks if check.part in reached]
        if self.reported is None or len(run) == len(self.checks):
            return self._cached_report(copy, None, remaining=self.left)
        return spliced(self.reported, self._cached_report(copy, None, remaining=self.left, checks=run), reached)

    def _cached_report(self, submission: Submission, static: dict | None,
                       remaining: Callable[[], float] | None = None, checks: list[Check] | None = None) -> dict:
        """The report of exactly this source (a fix's edited copy is another source, so another key). A cached
        report costs the hand-in's budget the seconds it took when it ran: the fix search after it gets the same
        time, and so the same fixes, whether the class is graded afresh or again (idempotent)."""
        checks = self.checks if checks is None else checks
        cache_key = report_cache.key(submission, [c.id for c in checks], self.limits, self.use_cuda, torch.__version__)
        cached = report_cache.load(self.cache, cache_key)
        if cached is None:
            with report_cache.claimed(self.cache, cache_key):
                cached = report_cache.load(self.cache, cache_key)  # stored by another grader while this one waited
                if cached is None:
                    started = time.monotonic()
                    report = _run_checks(submission, checks, self.limits, self.use_cuda, static, remaining)
                    if remaining is not None and remaining() <= 0:
                        raise fixes.OutOfTime()
                    report_cache.store(self.cache, cache_key, report, time.monotonic() - started)
                    return report
        report, seconds = cached
        self.started -= seconds  # set by report() or, for a regrade, by its left()
        if remaining is not None and remaining() <= 0:  # as the regrade it stands for would have run out
            raise fixes.OutOfTime()
        return report


def _run_checks(submission: Submission, checks: list[Check], limits: Limits, use_cuda: bool,
                static: dict | None = None, remaining: Callable[[], float] | None = None) -> dict:
    static = dict(static_pass.analyse(submission.source) if static is None else static)  # a key is added below
    if submission.syntax_errors:
        static.setdefault("syntax-error", [{"line": e["line"], "text": e["text"]} for e in submission.syntax_errors])
    violations = rules.violations(submission.source, submission.exercise)
    # a part that breaks the rules is not run at all: its code never gets to touch what the other parts measure
    part_ids = submission.exercise.part_ids
    blocked = {part for part in part_ids if rules.for_part(violations, part)}
    student = StudentCode(submission, limits, use_cuda, remaining)
    ctx = Context(student, static, use_cuda, violations, secret=grading_secret.draw(submission.source))
    results = []
    try:
        if blocked != set(part_ids):
            student.ensure_loaded()
        for spec in checks:
            try:
                skip = spec.part in blocked and not spec.id.endswith(".rules")
                outcome = not_run(spec, violations, submission) if skip else spec.run(ctx)
            except (SandboxUnavailable, parent_budget.OverBudget):  # no score rather than a wrong one, or the
                raise  # hand-in spent its budget inside a check: it ends the grading as submission-too-costly
            except Exception:  # a bug in a check must not cost the student the other checks
                detail = traceback.format_exc(limit=3).splitlines()[-1]
                outcome = Outcome(False, f"评分程序内部错误：{detail}", f"Internal grader error: {detail}")
            results.append((spec, outcome))
        results.append(integrity_check(student))
    finally:
        student.close()
    extras = {"isolation_missing": student.missing_isolation} if student.missing_isolation else {}
    return build_report(results, extras)


def main(*, path: str, json: bool = False, lang: str = "zh", report_cache: Path | None = None,
         fix_credit: float | None = None, exercise: str | None = None) -> int:
    """The `grade` verb. `report_cache`: the folder the CLI read from $ATTENTION_KIT_REPORT_CACHE; `exercise`: the
    name of the exercise it answers, where given (grader.exercises)."""
    if Path(path).is_dir() and not Path(path).is_symlink():
        raise UsageError(f"{path} is a folder: `grade` grades one notebook or .py file; a class folder is "
                         f"`python -m grader grade-all {path}`")
    if not (Path(path).is_file() or Path(path).is_symlink()):  # a link gets a report saying it is refused
        raise UsageError(f"no such file: {path}")
    report = grade_submission(path, cache=report_cache, fix_credit=fix_credit or 0.0,
                              exercise=exercises.exercise(exercise) if exercise else None)
    if json:
        print(json_module.dumps(in_language(report, lang), ensure_ascii=False, indent=1))
    else:
        print(render_text(report, lang))
    return 0

