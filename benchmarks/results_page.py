"""Append one run's figures to benchmarks/RESULTS.md, under its section, with the date, the command as it was
run and the machine's load average at its start and end: a figure without its command and load cannot be
compared with the next one."""
from __future__ import annotations

import datetime
import os
import shlex
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "RESULTS.md"


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def entry(command: str, load_at_start: str, figures: list[str], today: datetime.date) -> str:
    """The text appended: a dated line naming the command and the load, then the figures as printed."""
    printed = "\n".join(f"    {line}" for line in figures)
    return (f"{today.isoformat()}, `{command}`, load average (1, 5, 15 min) {load_at_start} at the start, "
            f"{load_average()} at the end:\n\n{printed}\n")


def record(section: str, figures: list[str], load_at_start: str, page: Path = PAGE,
           today: datetime.date | None = None) -> None:
    """Add the run at the end of `## {section}` (the section is made at the end of the page if it is missing)."""
    command = " ".join(["python", shlex.quote(os.path.relpath(sys.argv[0])), *map(shlex.quote, sys.argv[1:])])
    text = entry(command, load_at_start, figures, today or datetime.date.today())
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    heading = f"## {section}\n"
    if heading not in lines:
        lines += ["\n", heading]
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    lines[end:end] = ["\n", text, *(["\n"] if end < len(lines) and lines[end].strip() else [])]
    page.write_text("".join(lines), encoding="utf-8")
