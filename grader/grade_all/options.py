"""grade-all's command-line options (torch-free and nbgrader-free: the CLI imports this to build its parser)."""
from __future__ import annotations

import argparse

from grader.nbgrader.autograde_run import DB_URL_ENV


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """grade-all's own options; the options it shares with `grade` come from grader.cli."""
    parser.add_argument("dir", help="a folder of submissions; with --nbgrader, the nbgrader course directory")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once (default 1)")
    parser.add_argument("--json", dest="json_out", metavar="OUT", help="write the reports as a JSON list to OUT")
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
