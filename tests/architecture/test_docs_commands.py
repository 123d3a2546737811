"""Do the commands README.md and docs/instructors/*.md print run as printed, on a fresh copy of the course?

Each fenced `bash` block of those pages carries a mark on the line before its fence: `<!-- docs-test: run -->`
(or `<!-- docs-test: run, exit 1 (why) -->` where the page says the command fails), or
`<!-- docs-test: skip: why -->` for a synopsis with placeholders, an LMS download, a PostgreSQL server and root,
or the test suite itself. Per page, the runnable blocks go, in page order, into one `bash` (so an `export` holds
for the rest of the page) in a fresh copy of the repository's files: the files git tracks or would track, this
session's `.venv/` linked in, and a class of two Colab downloads in `downloaded/attention/extracted/` (what
Grading a class asks the instructor to save there). `PATH` holds only the system's folders: a command that needs
`.venv/bin` must say so. Every command's exit status is held to the page's. The session's report cache is
passed on, so a notebook another test graded is not graded again. On the shared 2-core machine the six pages
took 507 s of wall time and about 90 s of CPU, half of it README's `make demo` (docs/developing.md, *The
documented commands are run*).
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from support import colab_notebooks as cn
from support.paths import ROOT

pytestmark = pytest.mark.e2e

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "instructors").glob("*.md"))]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SESSION_VARIABLES = ("ATTENTION_KIT_REPORT_CACHE", "ATTENTION_KIT_PROBE_SECONDS", "ATTENTION_KIT_TEST_SESSION_REPORTS",
                     "OMP_NUM_THREADS")  # the session's conventions (tests/support/session.py), not a tool's place
FENCE = re.compile(r"^(\s*)```\s*(\S*)")
MARK = re.compile(r"^\s*<!-- docs-test: (run(?:, exit (\d+) \(\S.*\))?|skip: \S.*) -->\s*$")
VENV = Path(sys.prefix)  # the session's own .venv (a mutation audit's copy of the repository has none of its own)
CLASS = {"s2026001_attention.ipynb": "answered", "s2026002_Copy of attention.ipynb": "untouched"}


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    mark: str | None
    commands: list[str]

    @property
    def runs(self) -> bool:
        return self.mark is not None and self.mark.startswith("run")

    @property
    def exit_status(self) -> int:
        found = MARK.match(f"<!-- docs-test: {self.mark} -->")
        return int(found.group(2) or 0)


def bash_blocks(page: Path) -> list[Block]:
    """The page's fenced bash blocks, each with its mark and its commands (continued lines joined, comment lines
    and blank lines left out)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, index = [], 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if FENCE.match(lines[i]))
        if opening.group(2) in ("bash", "sh", "shell"):
            before = next((line for line in reversed(lines[:index]) if line.strip()), "")
            mark = MARK.match(before)
            commands, pending = [], ""
            for line in lines[index + 1:end]:
                text = line.strip()
                if not pending and (not text or text.startswith("#")):
                    continue
                pending += text
                if pending.endswith("\\"):
                    pending = pending[:-1] + " "
                else:
                    commands.append(pending)
                    pending = ""
            blocks.append(Block(page, index + 1, mark.group(1) if mark else None, commands))
        index = end + 1
    return blocks


RUNNABLE = {page: [block for block in bash_blocks(page) if block.runs] for page in PAGES}


def fresh_course(folder: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked, or new and not ignored, as in this checkout),
    and the session's .venv linked in, which make must take as made for this copy."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    (folder / ".venv").symlink_to(VENV)
    # make's stamp: a pyproject.toml newer than it reinstalls .venv; to the nanosecond (a float time may round up)
    made = (VENV / ".installed").stat().st_mtime_ns
    os.utime(folder / "pyproject.toml", ns=(made, made))
    release = nbformat.read(folder / "release" / "attention" / "attention.ipynb", as_version=4)
    notebooks = {"answered": cn.answered(release, cn.reference_answers()), "untouched": release}
    for name, state in CLASS.items():
        cn.write(cn.colab_saved(notebooks[state], seed=name), folder / "downloaded" / "attention" / "extracted" / name)
    return folder


def script(blocks: list[Block], statuses: Path) -> str:
    """One bash script: each command, then its exit status appended to `statuses`."""
    lines = []
    for block in blocks:
        for command in block.commands:
            lines += [f"printf '\\n$ %s\\n' {shlex.quote(command)}", command,
                      f"printf '%s\\n' \"$?\" >> {shlex.quote(str(statuses))}"]
    return "\n".join(lines) + "\n"


@pytest.mark.unit
def test_every_bash_block_is_marked():
    """A block without a mark would be left out of the run below without anyone deciding so."""
    unmarked = [f"{block.page.relative_to(ROOT)}:{block.line}" for page in PAGES for block in bash_blocks(page)
                if block.mark is None]
    assert not unmarked, "mark each with <!-- docs-test: run --> or <!-- docs-test: skip: why -->: " + ", ".join(unmarked)



@pytest.mark.unit
def test_the_reader_finds_the_blocks_and_their_marks():
    """The reader itself: the pages the instructor starts from have runnable blocks, with their commands whole."""
    readme = RUNNABLE[ROOT / "README.md"]
    assert readme[0].commands == ["make demo   # build the release, then grade a built-in demo class of each lab end "
                                  "to end with nbgrader and print the grade tables"]
    assert [block.exit_status for block in readme][:2] == [0, 1]
    assert RUNNABLE[ROOT / "docs" / "instructors" / "grading.md"][0].commands[0].startswith("export PATH=")
    skipped = [block for block in bash_blocks(ROOT / "docs" / "instructors" / "big-class.md") if not block.runs]
    assert any("createuser" in command for block in skipped for command in block.commands)



@pytest.mark.parametrize("page", [page for page in PAGES if RUNNABLE[page]], ids=lambda page: page.name)
def test_the_pages_commands_run_as_printed(page, tmp_path):
    assert (VENV / ".installed").is_file(), f"run the suite with .venv/bin/python after `make venv` ({VENV})"
    course = fresh_course(tmp_path / "course")
    statuses, home = tmp_path / "statuses", tmp_path / "home"
    home.mkdir()
    (tmp_path / "page.sh").write_text(script(RUNNABLE[page], statuses), encoding="utf-8")
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8",
           **{name: os.environ[name] for name in SESSION_VARIABLES if name in os.environ}}
    done = subprocess.run(["bash", str(tmp_path / "page.sh")], cwd=course, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=1800)
    commands = [(command, block.exit_status) for block in RUNNABLE[page] for command in block.commands]
    seen = [int(line) for line in statuses.read_text().split()] if statuses.exists() else []
    wrong = [f"{command!r} exited {status}, the page says {expected}"
             for (command, expected), status in zip(commands, seen) if status != expected]
    assert len(seen) == len(commands) and not wrong, \
        f"{page.name}: {wrong or 'the page stopped after ' + str(len(seen)) + ' command(s)'}\n{done.stdout[-6000:]}"
    if any("zip_collect" in command for command, _ in commands):  # the class was there to collect, and was
        collected = sorted(path.parts[-3] for path in (course / "submitted").glob("*/attention/attention.ipynb"))
        assert collected == ["s2026001", "s2026002"], done.stdout[-6000:]
