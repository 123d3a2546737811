"""Does every output survive every text a hand-in brings: a lone surrogate in an exception message, a file name
with the byte 0xff, a NUL? Every writer (the class's JSON, the table, the text report) escapes what it cannot
encode, and one student's bytes never cost another's row.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from support.paths import REFERENCE, ROOT
from grader.exercises.attention import MAX_SCORE
from grader.handin.clean_text import printable
from grader.grade_all.json_list import write_reports

pytestmark = pytest.mark.sandbox

RAISES = "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    raise ValueError({text!r})\n"


def test_a_lone_surrogate_and_a_nul_are_written_as_visible_escapes():
    assert printable("a\udc80b\x00c") == "a\\udc80b\\x00c"
    assert printable("\ud800\udfff", keep_newlines=False) == "\\ud800\\udfff"
    printable("\udc80").encode("utf-8")  # encodable


def test_the_class_json_is_written_whatever_a_row_holds(tmp_path):
    """A row whose student, path and error came from a name with the byte 0xff: the file is written, readable."""
    name = os.fsdecode(b"\xffmallory")
    row = {"student": name, "submission": f"/class/{name}.py", "score": 0.0, "max_score": MAX_SCORE, "checks": [],
           "mistakes": [], "advice": [], "error": "grading failed: ValueError: \udc80\x00"}
    out = tmp_path / "class.json"
    write_reports([row], out, "en")
    read = json.loads(out.read_text(encoding="utf-8"))
    assert read[0]["student"] == "\\udcffmallory" and read[0]["error"].endswith("\\udc80\\x00")


@pytest.fixture(scope="module")
def hostile_text_class(tmp_path_factory):
    """`grade-all --json` over a surrogate in an exception, a NUL in one, a file named with 0xff, and alice."""
    root = tmp_path_factory.mktemp("text-class")
    (root / "alice.py").write_bytes(REFERENCE.read_bytes())
    (root / "sam.py").write_text(RAISES.format(text="lone \udc80 surrogate"), encoding="utf-8")
    (root / "nul.py").write_text(RAISES.format(text="nul \x00 byte"), encoding="utf-8")
    (root / os.fsdecode(b"byte\xff.py")).write_bytes(REFERENCE.read_bytes())
    out = root.parent / "text-class.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(root), "--json", str(out), "--lang", "en"],
                          cwd=ROOT, capture_output=True, timeout=900)
    return done, out


def test_grade_all_writes_every_row_and_the_table_whatever_the_text(hostile_text_class):
    done, out = hostile_text_class
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {row["student"]: row for row in json.loads(out.read_text(encoding="utf-8"))}
    assert set(rows) == {"alice", "sam", "nul", "byte\\udcff"}
    assert rows["alice"]["score"] == rows["byte\\udcff"]["score"] == MAX_SCORE
    assert "\\udc80" in json.dumps(rows["sam"]) and "\\\\x00" in json.dumps(rows["nul"])
    table = done.stdout.decode("utf-8")  # strict: the table is UTF-8 through and through
    assert "byte\\udcff" in table and "alice" in table and "Submissions: 4" in table


def test_grader_grade_prints_a_report_with_a_surrogate_in_it(hostile_text_class, tmp_path):
    path = tmp_path / "sam.py"
    path.write_text(RAISES.format(text="lone \udc80 surrogate"), encoding="utf-8")
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(path), "--lang", "en", *extra], cwd=ROOT,
                              capture_output=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "\\udc80" in done.stdout.decode("utf-8")
