"""The hidden graders as a pytest suite: `python -m pytest -p grader.pytest_plugin --submission PATH`.

One test item per check, named by its check id, with the verdict, points and zh/en diagnosis of
`python -m grader grade PATH`: the submission is graded ONCE, in the same sandbox, at the first
item that runs, and each item reads its check from that report (no student code runs per item).
So pytest's habits work: `-k mask`, `-m part1` / `-m part2`, `-m gpu`, `--junitxml` (each
testcase carries `points`, `max_points` and `mistakes` as properties).

With --submission nothing else is collected (the repository's own tests are left alone). Items
marked `gpu` stand for the real-CUDA variants of the device checks: where there is no CUDA they
skip with the reason; the meta-device variant, which is what `grader grade` scores there, is the
check's own item.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.exercises import every_part

_PARTS = every_part()
MARKERS = {
    **{marker: "Part {}, {} (hidden graders)".format(
        next(part.number for part in _PARTS if part.marker == marker),
        " or ".join(part.graded_name for part in _PARTS if part.marker == marker))
       for marker in dict.fromkeys(part.marker for part in _PARTS)},  # `part1` is Part 1 of whichever exercise
    "gpu": "a hidden check's real-CUDA variant: skips where there is no CUDA",
}
PART_MARKER = {part.id: part.marker for part in _PARTS}
CUDA_VARIANTS = tuple(f"{part.id}.device" for part in _PARTS)
"""Checks that also run on a real CUDA device when one is present (each part's `device` check)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attention-kit", "attention-kit hidden graders")
    group.addoption("--submission", metavar="PATH",
                    help="grade this student notebook (.ipynb) or .py with the hidden graders, one test per check")
    group.addoption("--grader-lang", choices=("zh", "en"), default="zh",
                    help="language of each failure's heading, the check's title "
                         "(its diagnosis is always shown in zh and en)")


def pytest_load_initial_conftests(early_config: pytest.Config, parser, args) -> None:
    """The submission's folder is left as it was found: pytest would put its `.pytest_cache/` in the rootdir it
    derives from the submission's path (the option is not pytest's, so it reads the path as a test path), and
    the hidden graders have nothing to cache there. Blocked as `-p no:cacheprovider` blocks it, before the cache
    is configured; stepwise, which writes into that cache, with it."""
    if early_config.known_args_namespace.submission:
        for name in ("cacheprovider", "stepwise"):
            early_config.pluginmanager.set_blocked(name)


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if config.getoption("submission"):
        from grader.process import report_cache_from_env, single_threaded_torch
        from grader.sandbox.worker_process import start_fork_server_unless_cached

        start_fork_server_unless_cached(report_cache_from_env())  # before this process imports torch, as the CLI does
        single_threaded_torch()  # a pytest session is an entry point, as the CLI is
        config.pluginmanager.register(HiddenGraders(config), "attention-kit-hidden-graders")


class HiddenGraders:
    """Collects one item per check instead of any test file, and grades the submission once."""

    def __init__(self, config: pytest.Config):
        self.path = config.getoption("submission")
        self.lang = config.getoption("grader_lang")
        self._submission = None  # read once, at collection: its exercise says which checks to collect
        self._report: dict | None = None
        self.explained: set[tuple[str, str]] = set()  # catalog explanations already shown: (mistake id, language)

    def report(self) -> dict:
        if self._report is None:
            from grader.grade import grade
            from grader.process import report_cache_from_env
            from grader.report.text import in_language

            # an entry point, as the CLI is: it reads the instructor's report cache folder from the environment
            self._report = in_language(grade(self.submission(), cache=report_cache_from_env()), self.lang)
        return self._report

    def submission(self):
        if self._submission is None:
            from grader.handin.source import load_submission

            self._submission = load_submission(self.path)
        return self._submission

    def pytest_ignore_collect(self, collection_path, config):
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        from grader.checks import checks_for

        items.clear()
        for check in checks_for(exercise=self.submission().exercise):
            items.append(CheckItem.named(session, check.id, graders=self, check_id=check.id, part=check.part))
            if check.id in CUDA_VARIANTS:
                items.append(CheckItem.named(session, f"{check.id}[cuda]", graders=self, check_id=check.id,
                                             part=check.part, cuda=True))
        items.append(CheckItem.named(session, "integrity.tampering", graders=self, check_id="integrity.tampering",
                                     part="integrity"))

    def pytest_report_header(self, config):
        return f"attention-kit hidden graders: {self.path}"


class CheckFailed(Exception):
    """A check that did not pass: its message is the diagnosis, shown without a traceback."""


class CheckItem(pytest.Item):
    def __init__(self, *, graders: HiddenGraders, check_id: str, part: str, cuda: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.graders, self.check_id, self.cuda = graders, check_id, cuda
        if part in PART_MARKER:
            self.add_marker(PART_MARKER[part])
        if cuda:
            self.add_marker("gpu")

    @classmethod
    def named(cls, session: pytest.Session, name: str, **kwargs) -> "CheckItem":
        """An item id as pytest gives a test's, the submission's file and the check (`nomask.ipynb::sdpa.values`,
        shown relative to where pytest runs), rather than the folder pytest took for its rootdir."""
        submission = os.path.relpath(Path(kwargs["graders"].path).resolve(), session.config.rootpath)
        return cls.from_parent(session, name=name, nodeid=f"{submission}::{name}", **kwargs)

    def runtest(self) -> None:
        if self.cuda:
            import torch

            if not torch.cuda.is_available():
                pytest.skip("no CUDA device here: the real-CUDA variant of this check did not run "
                            f"(its meta-device variant is {self.check_id})")
        entry = next(c for c in self.graders.report()["checks"] if c["id"] == self.check_id)
        if not self.cuda:
            self.user_properties += [("points", entry["points"]), ("max_points", entry["max_points"]),
                                     ("mistakes", ",".join(entry["mistakes"]))]
        if not entry["passed"]:
            raise CheckFailed(entry)

    def repr_failure(self, excinfo, style=None):
        if not excinfo.errisinstance(CheckFailed):
            return super().repr_failure(excinfo, style)
        from grader.report.text import BOTH, check_lines

        entry = excinfo.value.args[0]
        # each mistake's catalog explanation once per session, as on the feedback page; the same text as every report
        lines = check_lines(entry, BOTH, self.graders.explained)
        if entry["mistakes"]:
            lines.insert(1, f"mistakes: {', '.join(entry['mistakes'])}")
        return "\n".join(lines)

    def reportinfo(self):
        return self.graders.path, None, self.name
