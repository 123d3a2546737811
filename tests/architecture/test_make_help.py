"""Does `make help` (and plain `make`) list every target with what it does?"""
from __future__ import annotations

import re
import subprocess

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.unit



def test_every_phony_target_is_listed_with_a_description():
    phony = re.search(r"^\.PHONY:(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1).split()
    for command in (["make", "-s", "help"], ["make", "-s"]):
        listed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
        described = dict(line.split(None, 1) for line in listed.splitlines() if line.strip())
        assert sorted(described) == sorted(phony), command
        assert all(text.strip() for text in described.values())
