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


def test_every_mutation_still_applies_and_names_tests_that_exist():
    """A file moved or a line reworded leaves a mutation that edits nothing, and the audit would call it caught:
    each edit's text is in its file exactly once, and each test it names is a file of the suite."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mutation_audit", ROOT / "scripts" / "mutation_audit.py")
    audit = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = audit  # dataclasses look their module up while the class is made
    spec.loader.exec_module(audit)
    stale = []
    for mutation in audit.MUTATIONS:
        path = ROOT / mutation.file
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        stale += [f"{mutation.name}: {before[:60]!r} in {mutation.file}" for before, _ in mutation.edits
                  if text.count(before) != 1]
        stale += [f"{mutation.name}: no {test}" for test in mutation.tests if not (ROOT / test.split("::")[0]).is_file()]
    assert stale == []
