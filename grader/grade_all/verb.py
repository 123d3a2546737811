"""The `grade-all` verb: check the options, then grade a folder or an nbgrader course."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from grader import exercises
from grader.errors import UsageError
from grader.grade_all.folder import grade_class
from grader.grade_all.json_list import write_reports
from grader.grade_all.text import class_summary, table
from grader.nbgrader.autograde_run import DB_URL_ENV


def main(*, dir: str, jobs: int = 1, json_out: str | None = None, lang: str = "zh",  # noqa: A002 (CLI name)
         nbgrader: str | None = None, db_url: str | None = None, db_url_file: str | None = None,
         shard: tuple[int, int] | None = None, force: bool = False, report_cache: Path | None = None,
         fix_credit: float | None = None, exercise: str | None = None) -> int:
    """`report_cache`: the folder the CLI read from $ATTENTION_KIT_REPORT_CACHE. `fix_credit`: None is 0 for a
    folder, the course's GradeWithHiddenGraders.fix_credit with --nbgrader. `exercise`: the name of the exercise
    every hand-in of a folder answers, where given (with --nbgrader the assignment names it)."""
    root = Path(dir)
    if not root.is_dir():
        raise UsageError(f"no such directory: {dir}")
    if nbgrader and exercise:
        raise UsageError("--exercise goes with a folder: with --nbgrader ASSIGNMENT the assignment names the exercise")
    if nbgrader:
        from grader.grade_all.nbgrader_mode import grade_nbgrader_course  # nbgrader: a second a folder never needs

        if db_url_file:
            try:
                db_url = Path(db_url_file).read_text(encoding="utf-8").strip()
            except OSError as error:
                raise UsageError(f"--db-url-file: cannot read {db_url_file}: {error.strerror}") from None
        grade_nbgrader_course(root, nbgrader, jobs=jobs, json_out=json_out, lang=lang,
                              db_url=db_url or os.environ.get(DB_URL_ENV) or None,
                              shard=shard, force=force, report_cache=report_cache, fix_credit=fix_credit)
        return 0
    if db_url or db_url_file or shard or force:
        raise UsageError("--db-url, --db-url-file, --shard and --force go with --nbgrader ASSIGNMENT")
    reports = grade_class(root, jobs, progress=sys.stderr.isatty(), cache=report_cache,
                          fix_credit=fix_credit or 0.0, exercise=exercises.exercise(exercise) if exercise else None)
    if json_out:
        write_reports(reports, json_out, lang)
    if reports:
        print(table(reports))
        print()
    print(class_summary(reports, lang))
    return 0
