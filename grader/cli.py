"""Command line: each verb is a function in its own module; this file only wires arguments to them,
does the process-wide setup once (grader.process), and turns a GraderError into `grader: MESSAGE` on
stderr and its exit code (grader.errors)."""
from __future__ import annotations

import argparse
import importlib
import sys

from grader import exercises
from grader.errors import GraderError
from grader.grade_all.options import add_arguments as add_grade_all_arguments
from grader.process import (freeze_imported_objects, put_nbgrader_tools_on_path, report_cache_from_env,
                            single_threaded_torch)
from grader.sandbox import availability

# verb -> "module:function"; imported lazily so `grader build` never pays for torch.
VERBS = {
    "build": "grader.build:main",
    "grade": "grader.grade:main",
    "grade-all": "grader.grade_all.verb:main",
    "demo": "grader.demo:main",
    "release-solutions": "grader.build.release_solutions:main",
    "gradescope": "grader.gradescope.verb:main",
}

# verbs that run student code: their fork server starts before the verb imports torch
SANDBOXED = {"grade", "grade-all", "gradescope run"}  # verb, or "verb action"
# verbs that need the sandbox to start: asked before they read or grade anything
NEEDS_SANDBOX = SANDBOXED | {"demo"}


def add_grading_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `grade` and `grade-all` share, declared once: an option added here reaches both verbs
    (as a keyword argument of the same name)."""
    add_lang_argument(parser, "the messages (and grade-all's class summary)")
    parser.add_argument("--exercise", choices=exercises.NAMES,
                        help="the exercise the hand-ins answer; default: each one's file name (`Copy of attention "
                             "(1).ipynb`), then the graded names its code defines")
    parser.add_argument("--fix-credit", type=fix_fraction, metavar="FRACTION",
                        help="award FRACTION (0 to 1) of the points a verified fix earns, per part; fixes are "
                             "shown to students whatever FRACTION is. Default 0; with grade-all --nbgrader, the "
                             "course's GradeWithHiddenGraders.fix_credit (nbgrader_config.py)")


def add_lang_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """--lang, one default for every verb that takes it: the class summary of grade-all and of the demo alike."""
    parser.add_argument("--lang", choices=["zh", "en"], default="zh", help=f"language of {what}: zh (Chinese, default) or en")


def fix_fraction(text: str) -> float:
    """--fix-credit: a fraction between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:  # also NaN
        raise argparse.ArgumentTypeError(f"--fix-credit wants a fraction between 0 and 1, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description="attention-kit grader")
    verbs = parser.add_subparsers(dest="verb", required=True)

    build = verbs.add_parser("build", help="regenerate release/, exercises/ and solutions/ from source/")
    build.add_argument("--check", action="store_true", help="fail if a generated file differs, write nothing")

    grade = verbs.add_parser("grade", help="grade one submission (.ipynb or .py)")
    grade.add_argument("path", help="the submission: a student notebook (.ipynb, as Colab or Jupyter saved it) "
                                    "or a .py file defining the graded names")
    grade.add_argument("--json", action="store_true", help="print the JSON report (docs/reading-a-report.md) instead of text")
    add_grading_arguments(grade)

    grade_all = verbs.add_parser("grade-all", help="grade every submission under DIR")
    add_grade_all_arguments(grade_all)
    add_grading_arguments(grade_all)

    demo = verbs.add_parser("demo", help="build, then grade a demo class end to end with nbgrader")
    demo.add_argument("--dir", default="demo", help="scratch course folder (git-ignored)")
    add_lang_argument(demo, "the class summary (as grade-all prints it)")

    release = verbs.add_parser("release-solutions", help="publish the solutions into release/<assignment>/solutions/")
    release.add_argument("assignment", help="the nbgrader assignment, e.g. attention")
    release.add_argument("--force", action="store_true", help="release even if submissions are ungraded")
    release.add_argument("--course", help="the nbgrader course directory (default: the repo root)")
    gradescope = verbs.add_parser("gradescope", help="the hidden graders as a Gradescope autograder")
    actions = gradescope.add_subparsers(dest="action", required=True, metavar="{build,run}",
                                        help="build: write autograder.zip; run: grade as run_autograder does")
    build_zip = actions.add_parser("build", help="write autograder.zip (setup.sh, run_autograder, the grader)")
    build_zip.add_argument("--out", default="autograder.zip", help="the zip to write (default: autograder.zip)")
    build_zip.add_argument("--fix-credit", type=fix_fraction, metavar="FRACTION",
                           help="award FRACTION (0 to 1) of the points a verified fix earns, as grade --fix-credit")
    run_zip = actions.add_parser("run", help="what run_autograder runs: grade ROOT/submission, write "
                                             "ROOT/results/results.json")
    run_zip.add_argument("--root", default="/autograder", help="the /autograder-shaped folder (default /autograder)")
    return parser


def run(args: dict) -> int:
    """The verb named by args["verb"], with the rest as its keyword arguments, after the process setup."""
    verb_name = args.pop("verb")
    put_nbgrader_tools_on_path()  # nbgrader's Gradebook runs `alembic` through this process's PATH
    if verb_name in NEEDS_SANDBOX or f"{verb_name} {args.get('action')}" in NEEDS_SANDBOX:
        reason = availability.problem()
        if reason:  # one line and no grade row, rather than a class of zeros
            raise GraderError(availability.refusal(reason))
    if verb_name in SANDBOXED or f"{verb_name} {args.get('action')}" in SANDBOXED:
        from grader.sandbox.worker_process import start_fork_server_unless_cached  # not importable off Linux

        args["report_cache"] = report_cache_from_env()
        start_fork_server_unless_cached(args["report_cache"])  # before torch loads in this process
        single_threaded_torch()
    module_name, function_name = VERBS[verb_name].split(":")
    verb = getattr(importlib.import_module(module_name), function_name)
    if verb_name in SANDBOXED or f"{verb_name} {args.get('action')}" in SANDBOXED:
        freeze_imported_objects()  # torch and the verb's modules are loaded now
    return int(verb(**args) or 0)


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # the last wall: what a terminal's encoding cannot hold is escaped
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    args = vars(_parser().parse_args(argv))
    try:
        return run(args)
    except GraderError as error:
        print(f"grader: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main())
