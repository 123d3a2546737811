"""The one `nbgrader autograde` child of `grade-all --nbgrader`, the gradebook's only writer: its command
line and environment, and its log (kept whole in a file, errors echoed, notebooks counted).

Torch-free and nbgrader-free at import: grader.grade_all.options reads DB_URL_ENV to build the parser."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from grader.handin.clean_text import printable
from grader.process import ROOT, nbgrader_env

DB_URL_ENV = "ATTENTION_KIT_DB_URL"
"""The gradebook's URL, which may hold a password, travels in this environment variable: every user can
read a process's command line in /proc, only its owner its environment. grade-all reads it when
--db-url is not given and hands it to its `nbgrader autograde` child this way; nbgrader_config.py reads it."""
NBGRADER_LOG_LEVEL = re.compile(r"\[\w+ \| (DEBUG|INFO|WARNING|ERROR|CRITICAL)\]")
"""How nbgrader starts a log line: `[AutogradeApp | WARNING] ...`."""


def autograde_invocation(assignment: str, overrides: list[str], db_url: str | None, excluded: list[str],
                         force: bool) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the `nbgrader autograde` child. `overrides`: the nbgrader options
    the in-process pass got too (never a secret); the gradebook's URL goes in the environment (DB_URL_ENV,
    which nbgrader_config.py reads), never on the command line."""
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, *overrides, "--log-level=INFO"]
    if excluded:
        command.append(f"--CourseDirectory.student_id_exclude={','.join(excluded)}")
    if force:
        command.append("--force")
    env = nbgrader_env()
    # should it grade a notebook itself (not in the cache): see grader.process.single_threaded_torch
    env.update({"PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")})
    if db_url:
        env[DB_URL_ENV] = db_url
    return command, env


def run_autograde(command: list[str], env: dict[str, str], log_path: Path, total: int, progress: bool) -> int:
    """Run the child from the repo root (where nbgrader finds nbgrader_config.py). Its whole log goes to
    `log_path`; errors (with their tracebacks) are echoed to stderr; a progress bar counts the `total`
    notebooks it autogrades. Returns its exit status."""
    bar = tqdm(total=total, unit="notebook", desc="nbgrader autograde", file=sys.stderr,
               dynamic_ncols=True) if progress else None
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
