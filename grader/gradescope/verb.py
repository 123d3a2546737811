"""The `gradescope` verb: `build` the autograder zip, or `run` it (what run_autograder calls)."""
from __future__ import annotations

from pathlib import Path


def main(*, action: str, exercise: str, out: str = "autograder.zip", fix_credit: float | None = None,
         root: str = "/autograder", report_cache: Path | None = None) -> int:
    """`exercise`: the assignment the autograder grades; `report_cache`: the folder the CLI read from
    $ATTENTION_KIT_REPORT_CACHE (for `run`)."""
    if action == "build":
        from grader.gradescope.build import main as build

        return build(exercise=exercise, out=out, fix_credit=fix_credit)
    from grader.gradescope.run import main as run

    return run(exercise=exercise, root=root, report_cache=report_cache)
