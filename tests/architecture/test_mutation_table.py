"""Is the mutation table in docs/developing.md the audit's own list of mutations, row for row?"""
import subprocess
import sys

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.unit

START, END = "<!-- mutation table: written by scripts/mutation_audit.py --table -->\n", "<!-- end of the mutation table -->"


def test_the_developing_page_holds_the_audits_table():
    page = (ROOT / "docs" / "developing.md").read_text(encoding="utf-8")
    shown = page[page.index(START) + len(START):page.index(END)]
    printed = subprocess.run([sys.executable, str(ROOT / "scripts" / "mutation_audit.py"), "--table"],
                             capture_output=True, text=True, check=True).stdout
    assert shown == printed, "docs/developing.md's mutation table drifted: paste `scripts/mutation_audit.py --table`"
    assert printed.count("\n") >= 50  # a header, its rule and a row per mutation
