"""Does a benchmark's `--record` add its figures to benchmarks/RESULTS.md under its own section, dated, with the
command and the load beside them, leaving the rest of the page as it was?"""
from __future__ import annotations

import datetime
import importlib.util
import sys

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.unit

SPEC = importlib.util.spec_from_file_location("results_page", ROOT / "benchmarks" / "results_page.py")
results_page = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(results_page)

PAGE = """# Measured results

## Grading a class

old grading figure

## The public self-check

old self-check figure

## The test suite

old suite figure
"""


def test_a_run_lands_at_the_end_of_its_section_with_date_command_and_load(tmp_path, monkeypatch):
    page = tmp_path / "RESULTS.md"
    page.write_text(PAGE, encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["benchmarks/selfcheck_speed.py", "--runs", "5", "--record"])
    results_page.record("The public self-check", ["import torch median 1.39 s"], "0.5 0.4 0.3", page,
                        today=datetime.date(2026, 12, 3))
    text = page.read_text(encoding="utf-8")
    section = text[text.index("## The public self-check"):text.index("## The test suite")]
    assert section.index("old self-check figure") < section.index("2026-12-03")
    assert "`python benchmarks/selfcheck_speed.py --runs 5 --record`" in section
    assert "load average (1, 5, 15 min) 0.5 0.4 0.3 at the start" in section
    assert "    import torch median 1.39 s\n" in section
    assert "\n\n\n" not in text  # one blank line between the run and the next section, as elsewhere
    assert text.replace(section, "") == PAGE.replace(PAGE[PAGE.index("## The public"):PAGE.index("## The test")], "")


def test_a_section_the_page_lacks_is_added_at_its_end(tmp_path):
    page = tmp_path / "RESULTS.md"
    page.write_text(PAGE, encoding="utf-8")
    results_page.record("Probe calls", ["slowest call 0.10 s"], "1.0 1.0 1.0", page, today=datetime.date(2026, 12, 3))
    text = page.read_text(encoding="utf-8")
    assert text.startswith(PAGE) and text.index("## Probe calls") > text.index("old suite figure")
    assert text.rstrip().endswith("slowest call 0.10 s")


def test_the_real_page_has_the_section_selfcheck_speed_records_into():
    assert "## The public self-check\n" in (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
