"""When `make test-setup` cannot install what the slow tiers need (no package mirror, a broken /tmp), does it say,
in one line each and before the suite runs, which tests will skip and why, and let the suite run?"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import e2e_tools
from support.paths import ROOT

pytestmark = pytest.mark.unit

APT_ERROR = "E: Failed to fetch http://deb.example/debian/dists/bookworm/InRelease  Could not resolve 'deb.example'"


@pytest.fixture
def failing_apt_update(tmp_path, monkeypatch) -> Path:
    """An apt-get whose `update` fails as with no mirror; it records each call."""
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "apt-get"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\necho "Reading package lists..."\necho "{APT_ERROR}" >&2\nexit 100\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    for package in e2e_tools.DEBIAN_PACKAGES:
        monkeypatch.setitem(e2e_tools.DEBIAN_PACKAGES, package, lambda: False)
    monkeypatch.setattr(e2e_tools, "colab_python", lambda: Path("/made/already"))  # the venvs are not this test's
    monkeypatch.setattr(e2e_tools, "unprivileged_python", lambda: Path("/made/already"))
    return calls


def test_a_failed_apt_update_is_told_in_one_line_naming_the_tests_that_skip(failing_apt_update, capsys):
    assert e2e_tools.main() == 0  # the suite still runs, with those tests skipping
    assert failing_apt_update.read_text() == "update\n"
    told = capsys.readouterr().err
    assert told.count("\n") == 1 and told.startswith("test-setup: chromium fonts-wqy-microhei postgresql not installed"), told
    assert f"`apt-get update` failed ({APT_ERROR})" in told, told
    assert ("tests/nbgrader_plugins/test_nbgrader_feedback_browser.py skips (no chromium, fonts-wqy-microhei); "
            "tests/grade_all/test_grade_all_postgres.py skips (no postgresql)") in told, told


def test_a_venv_that_cannot_be_made_is_told_in_one_line_naming_the_tests_that_skip(tmp_path, monkeypatch, capsys):
    """As under a broken /tmp: here the venv's folder lies under a file, so `python -m venv` really fails."""
    for package in e2e_tools.DEBIAN_PACKAGES:
        monkeypatch.setitem(e2e_tools.DEBIAN_PACKAGES, package, lambda: True)
    (tmp_path / "a-file").write_text("")
    broken = tmp_path / "a-file" / "venv"
    monkeypatch.setitem(e2e_tools.SKIPPED_WITHOUT_VENV, broken, e2e_tools.SKIPPED_WITHOUT_VENV[e2e_tools.COLAB_VENV])
    monkeypatch.setattr(e2e_tools, "COLAB_VENV", broken)
    monkeypatch.setattr(e2e_tools, "colab_python", lambda: None)
    monkeypatch.setattr(e2e_tools, "unprivileged_python", lambda: Path("/made/already"))
    assert e2e_tools.main() == 0
    told = capsys.readouterr().err
    assert told.count("\n") == 1 and told.startswith(f"test-setup: the Colab-like venv at {broken} not made: "), told
    assert "tests/student/test_public_selfcheck.py skips (the self-check as a student runs it)" in told, told


def test_each_package_names_a_test_file_that_looks_for_it():
    """The files the line names are those that check for the tool: a test moved or renamed fails here."""
    assert set(e2e_tools.SKIPPED_WITHOUT) == set(e2e_tools.DEBIAN_PACKAGES)
    assert set(e2e_tools.SKIPPED_WITHOUT_VENV) == {e2e_tools.COLAB_VENV, e2e_tools.UNPRIVILEGED_VENV}
    looks_for = {"chromium": "e2e_tools.chromium()", "postgresql": "e2e_tools.postgres_bin()",
                 "fonts-wqy-microhei": "e2e_tools.chromium()"}  # the browser draws the Chinese text with it
    for package, file in e2e_tools.SKIPPED_WITHOUT.items():
        assert looks_for[package] in (ROOT / file).read_text(encoding="utf-8"), (package, file)
