"""Command line: each verb is a function in its own module; this file only wires arguments to them."""
from __future__ import annotations

import argparse
import importlib
import sys

# verb -> "module:function"; imported lazily so `grader build` never pays for torch.
VERBS = {
    "build": "grader.build:main",
    "grade": "grader.grade:main",
    "grade-all": "grader.grade_all:main",
    "demo": "grader.demo:main",
    "release-solutions": "grader.release_solutions:main",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m grader", description="attention-kit grader")
    verbs = parser.add_subparsers(dest="verb", required=True)

    build = verbs.add_parser("build", help="regenerate release/, exercises/ and solutions/ from source/")
    build.add_argument("--check", action="store_true", help="fail if a generated file differs, write nothing")

    grade = verbs.add_parser("grade", help="grade one submission (.ipynb or .py)")
    grade.add_argument("path", help="the submission: a student notebook (.ipynb, as Colab or Jupyter saved it) "
                                    "or a .py file defining the graded names")
    grade.add_argument("--json", action="store_true", help="print the JSON report (DESIGN.md) instead of text")
    grade.add_argument("--lang", choices=["zh", "en"], default="zh",
                       help="language of the messages: zh (Chinese, default) or en (English)")

    grade_all = verbs.add_parser("grade-all", help="grade every submission under DIR")
    from grader.grade_all import add_arguments  # its own options (the module loads no torch)

    add_arguments(grade_all)

    demo = verbs.add_parser("demo", help="build, then grade a demo class end to end with nbgrader")
    demo.add_argument("--dir", default="demo", help="scratch course folder (git-ignored)")

    release = verbs.add_parser("release-solutions", help="publish the solutions into release/<assignment>/solutions/")
    release.add_argument("assignment", help="the nbgrader assignment, e.g. attention")
    release.add_argument("--force", action="store_true", help="release even if submissions are ungraded")
    release.add_argument("--course", help="the nbgrader course directory (default: the repo root)")
    return parser


# verbs that run student code: their fork server starts before the verb imports torch
SANDBOXED = {"grade", "grade-all"}


def main(argv: list[str] | None = None) -> int:
    args = vars(_parser().parse_args(argv))
    if args["verb"] in SANDBOXED:
        from grader.sandbox.worker_process import start_fork_server

        start_fork_server()
    module_name, function_name = VERBS[args.pop("verb")].split(":")
    verb = getattr(importlib.import_module(module_name), function_name)
    return int(verb(**args) or 0)


if __name__ == "__main__":
    sys.exit(main())
