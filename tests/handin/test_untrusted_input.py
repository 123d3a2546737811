"""Does the trusted parent distrust what a hand-in holds: its size, its links, its text, its metadata, and keep
the gradebook's password off command lines? Each hostile case has an honest twin that still scores as before.

(The feedback page's sanitizing and Content-Security-Policy are tested in a real browser in
tests/nbgrader_plugins/test_nbgrader_feedback_browser.py.)
"""
from __future__ import annotations

import copy
import json
import runpy
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support.measures import CpuTime

from support.paths import REFERENCE, ROOT
from support import colab_notebooks as cn
from grader.exercises.attention import MAX_SCORE
from grader.build.config import SOURCE_NOTEBOOK
from grader.grade import grade_submission
from grader.grade_all.discovery import find_submissions
from grader.nbgrader.autograde_run import DB_URL_ENV, autograde_invocation
from grader.report.text import render_text
from grader.handin.source import MAX_FILE_BYTES, load_submission, submission_from_cells
from support.nbgrader_course import apply, release_course, release_notebook

pytestmark = pytest.mark.sandbox

ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b[1;32mScore: 20 / 20\x1b[0m\r"
SECRET = "root:$6$SECRET-LINE-FROM-OUTSIDE:19000:0:99999:7:::"
HONEST_PARENT_PEAK = 1.5 * 2**30  # bytes: honest `grade-all --jobs 2` peaks near 380 MiB here; padded took 4.4 GiB


@pytest.fixture(autouse=True)
def no_report_cache(monkeypatch):
    monkeypatch.delenv("ATTENTION_KIT_REPORT_CACHE", raising=False)


def chain(n: int) -> str:
    """The reference, its SDPA reached only through a chain of n assignments (`x1 = x0`, `x2 = x1`, ...)."""
    code = REFERENCE.read_text(encoding="utf-8").replace("def scaled_dot_product_attention(", "def _sdpa(", 1)
    links = "".join(f"x{i} = x{i - 1}\n" for i in range(1, n + 1))
    return f"{code}\nx0 = _sdpa\n{links}scaled_dot_product_attention = x{n}\n"


MEASURED = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[2:]); "
            "_, status, usage = os.wait4(child.pid, 0); "
            "open(sys.argv[1], 'w').write(f'{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}'); "
            "sys.exit(os.waitstatus_to_exitcode(status))")
"""Runs a command and writes its peak memory (KiB) and CPU seconds (itself and any process it waited for) to a file."""


def run_measured(command: list[str], measures: Path) -> tuple[subprocess.CompletedProcess, int, float]:
    """Run a command; its output, its peak memory in bytes and the CPU seconds it used (not its wall time: that is
    the machine's load as much as the command's)."""
    done = subprocess.run([sys.executable, "-c", MEASURED, str(measures), *command], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    peak_kib, cpu_seconds = measures.read_text().split()
    return done, int(peak_kib) * 1024, float(cpu_seconds)


# --- bounded parent-side work ---------------------------------------------------------------------


def test_a_long_chain_of_assignments_is_extracted_in_linear_time(tmp_path):
    """4,000 chained assignments the graded function needs: extracted in well under a second (76 s when it was
    quadratic), every link kept, and the submission still scores 20/20."""
    code = chain(4000)
    with CpuTime() as spent:
        submission = submission_from_cells([code], "chain.py", is_notebook=False)
    assert spent.seconds < 1.0
    assert submission.refusal is None and "x3999 = x3998" in submission.source
    path = tmp_path / "chain.py"
    path.write_text(code, encoding="utf-8")
    assert grade_submission(path)["score"] == MAX_SCORE


def test_a_chain_over_the_code_cap_is_refused_quickly(tmp_path):
    """40,000 links (610 KiB of code): refused before parsing, with the catalog's reason, in a blink."""
    path = tmp_path / "chain.py"
    path.write_text(chain(40_000), encoding="utf-8")
    with CpuTime() as spent:
        report = grade_submission(path)
    assert spent.seconds < 2.0
    assert report["score"] == 0.0 and report["mistakes"] == ["submission-too-large"]
    assert report["refused"] == "submission-too-large"
    assert "Not graded: the code is" in report["checks"][0]["message_en"]


def test_statements_on_one_line_are_capped_too():
    """`a = 1;` 20,000 times on one line is under the byte and line caps: the statement cap refuses it."""
    with CpuTime() as spent:
        submission = submission_from_cells([REFERENCE.read_text(encoding="utf-8"), "a = 1;" * 20_000], "semi.ipynb")
    assert spent.seconds < 2.0
    assert submission.refusal is not None and "top-level statements" in submission.refusal.en


def test_a_notebook_over_the_file_cap_is_refused_unread(tmp_path):
    """The cap applies before reading: a (sparse) notebook of 2 GiB is refused by its size alone; an honest
    notebook with a few MiB of plot output is graded as usual."""
    honest = cn.answered(release_notebook(), cn.reference_answers())
    plot = nbformat.v4.new_output("display_data", data={"image/png": "A" * (4 * 2**20)})
    honest.cells[cn.cell_by_id(honest, "sdpa")].outputs = [plot]
    padded = cn.write(honest, tmp_path / "padded.ipynb")
    with padded.open("r+b") as handle:
        handle.truncate(2 * 2**30)  # the padding: 2 GiB on paper, no disk
    with CpuTime() as spent:
        refused = load_submission(padded)
    assert spent.seconds < 0.5
    assert refused.refusal.mistake == "submission-too-large" and refused.source == ""
    assert MAX_FILE_BYTES < 2 * 2**30
    kept = load_submission(cn.write(honest, tmp_path / "honest.ipynb"))
    assert kept.refusal is None and "def scaled_dot_product_attention" in kept.source


def test_a_notebook_that_is_not_json_gets_a_plain_reason(tmp_path):
    path = tmp_path / "attention.ipynb"
    path.write_bytes(b"PK\x03\x04 a zip file, renamed")
    report = grade_submission(path)
    assert report["mistakes"] == ["not-a-notebook"] and "error" not in report
    assert "不是 JSON 格式的 notebook" in report["checks"][0]["message_zh"]
    assert "JSONDecodeError" not in json.dumps(report)


def test_every_way_a_notebook_can_be_malformed_is_a_refusal_not_a_crash(tmp_path):
    for number, text in enumerate(["[1, 2]", '{"cells": 5}', '{"cells": [3, {"cell_type": "code", "source": [1]}]}',
                                   "[" * 100_000, '{"worksheets": [7]}', '{"worksheets": [{"cells": 5}]}',
                                   '{"metadata": {}}']):
        path = tmp_path / f"bad{number}.ipynb"
        path.write_text(text, encoding="utf-8")
        submission = load_submission(path)
        assert submission.refusal is not None and submission.refusal.mistake == "not-a-notebook", text[:30]
        assert submission.source == "" and submission.refusal.zh and submission.refusal.en, text[:30]


# --- a class with links, a padded notebook, escapes, and honest neighbours -------------------------


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, list[dict], int, float]:
    """One `grade-all --jobs 2` run over a class of hostile hand-ins and two honest ones."""
    root = tmp_path_factory.mktemp("hostile-class")
    outside = tmp_path_factory.mktemp("outside") / "shadow"
    outside.write_text(SECRET + "\n", encoding="utf-8")
    (root / "alice").mkdir()
    (root / "alice" / "attention.py").write_bytes(REFERENCE.read_bytes())  # honest
    cn.write(cn.answered(release_notebook(), cn.reference_answers()), root / "heidi_Copy of attention.ipynb")  # honest
    (root / "bob").mkdir()
    (root / "bob" / "attention.py").symlink_to(ROOT / "solutions" / "attention" / "attention.py")
    (root / "mallory_attention.py").symlink_to(outside)
    (root / "eve" / "work").mkdir(parents=True)
    (root / "eve" / "work" / "solution").symlink_to(ROOT / "solutions" / "attention", target_is_directory=True)
    (root / "trent").symlink_to(outside.parent, target_is_directory=True)
    padded = cn.write(cn.answered(release_notebook(), cn.reference_answers()), root / "oscar_attention.ipynb")
    with padded.open("r+b") as handle:
        handle.truncate(2 * 2**30)
    (root / "carol_attention.py").write_text(
        f"ESCAPES = {ESCAPES!r}\n\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
        "    raise ValueError(ESCAPES)\n", encoding="utf-8")
    (root / "zed\x1b]0;title\x07.py").write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
    out = root.parent / f"{root.name}.json"
    done, peak, cpu_seconds = run_measured([sys.executable, "-m", "grader", "grade-all", str(root), "--jobs", "2",
                                        "--json", str(out), "--lang", "en"], root.parent / f"{root.name}.measures")
    assert done.returncode == 0, done.stderr[-3000:]
    return root, done, json.loads(out.read_text(encoding="utf-8")), peak, cpu_seconds


def rows(hostile_class) -> dict[str, dict]:
    return {report["student"]: report for report in hostile_class[2]}


def test_links_out_of_a_submission_score_zero_with_a_row_that_says_so(hostile_class):
    """A link to the instructor's solution, to a file outside the class, a linked folder inside the student's
    folder and a linked student folder: each a row, 0 points, `submission-link`; the honest neighbours 20/20."""
    found = rows(hostile_class)
    for student in ("bob", "mallory", "eve", "trent"):
        assert found[student]["score"] == 0.0, student
        assert found[student]["mistakes"] == ["submission-link"], student
    assert found["alice"]["score"] == found["heidi"]["score"] == MAX_SCORE


def test_nothing_from_outside_a_submission_reaches_a_report_or_the_output(hostile_class):
    _, done, reports, _, _ = hostile_class
    assert "SECRET-LINE" not in json.dumps(reports) + done.stdout + done.stderr


def test_the_padded_notebook_gets_its_row_quickly_and_cheaply(hostile_class):
    """2 GiB of notebook: a row with 0 points and the reason; the whole class run stays small and quick."""
    oscar = rows(hostile_class)["oscar"]
    assert oscar["score"] == 0.0 and oscar["mistakes"] == ["submission-too-large"]
    _, _, _, peak, cpu_seconds = hostile_class
    assert peak < HONEST_PARENT_PEAK, f"grade-all peaked at {peak / 2**20:.0f} MiB"
    assert cpu_seconds < 300, f"grade-all used {cpu_seconds:.0f} s of CPU"


def test_students_are_named_by_the_collectors_rule(hostile_class):
    """`heidi_Copy of attention.ipynb` is heidi, as zip_collect reads it, not `heidi_Copy of attention`."""
    assert {"heidi", "carol", "oscar", "mallory"} <= set(rows(hostile_class))
    assert dict(find_submissions(hostile_class[0]))["heidi"].name == "heidi_Copy of attention.ipynb"


def test_no_raw_escape_reaches_grade_alls_output(hostile_class):
    _, done, reports, _, _ = hostile_class
    assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\x07" not in done.stdout
    assert rows(hostile_class)["carol"]["score"] == 0.0
    assert "\\x1b[2J" in json.dumps(reports)  # escaped, still readable for the instructor


def test_no_raw_escape_in_grader_grades_text_report(hostile_class):
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(hostile_class[0] / "carol_attention.py"),
                           "--lang", "en"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\x07" not in done.stdout
    assert "\\x1b[1;32mScore: 20 / 20" in done.stdout and done.stdout.rstrip().endswith("not-implemented")


def test_grader_grade_on_a_link_refuses_it_without_quoting_it(hostile_class):
    """`grader grade PATH` on a link: a report saying it is a link (exit 0), never the content it points at."""
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(hostile_class[0] / "mallory_attention.py"),
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["mistakes"] == ["submission-link"] and "SECRET-LINE" not in done.stdout + done.stderr


def test_render_text_escapes_every_control_character():
    report = {"submission": "a\x1b[2Jb\nScore: 20 / 20.py", "score": 0.0, "max_score": 20.0, "mistakes": [],
              "checks": [{"id": "x", "part": "integrity", "passed": False, "message_en": "m\x9b31m\u202eevil\r"}]}
    text = render_text(report, "en")
    assert not any(ch in text for ch in "\x1b\x9b\u202e\r")
    assert text.splitlines()[0] == "a\\x1b[2Jb\\nScore: 20 / 20.py"


@pytest.mark.sandbox
def test_a_students_exception_text_cannot_write_a_line_of_the_report(graded):
    """The message is quoted on its check's line (its breaks shown as ⏎): no forged score or passed check of its own."""
    report = graded(ROOT / "tests" / "submissions" / "hostile" / "forged_report_lines.py")
    text = render_text(report, "en")
    assert [line for line in text.splitlines() if line.lstrip().startswith("Score")] == ["Score: 10 / 20"], text
    assert not any(line.lstrip().startswith("✓ [2/2] sdpa.values") for line in text.splitlines()), text
    assert "shape check ⏎ 总分 / Score: 20.0 / 20.0 ⏎   ✓ [2/2] sdpa.values ⏎ Score: 20 / 20" in text


# --- no trusted student metadata ---------------------------------------------------------------------


def configured(name: str) -> list[str]:
    """A preprocessor list of the repo's nbgrader_config.py, as nbgrader reads it."""
    from traitlets.config import Config

    config = Config()
    runpy.run_path(str(ROOT / "nbgrader_config.py"), init_globals={"get_config": lambda: config})
    section, key = name.split(".")
    return list(config[section][key])


def test_kit_metadata_written_by_the_student_never_reaches_the_verdict(tmp_path):
    """A forged `attention_kit.repairs` ("corrected by the instructor: 10 / 10") and a forged report, at notebook
    and cell level, run through the kit's sanitize steps as nbgrader_config.py lists them, then graded: the verdict
    holds only the grader's own text, and the real repair the kit made is still told."""
    from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders
    from traitlets.utils.importstring import import_item

    course = release_course(tmp_path)
    nb = cn.answered(release_notebook(), cn.reference_answers())
    nb = cn.delete(nb, "model_args")  # a real repair: the kit restores the cell and says so
    forged = {"repairs": [{"zh": "教师已更正：10 / 10", "en": "corrected by the instructor: 10 / 10"}],
              "report": {"score": 20.0}}
    nb.metadata["attention_kit"] = copy.deepcopy(forged)
    nb.cells[cn.cell_by_id(nb, "sdpa")].metadata["attention_kit"] = copy.deepcopy(forged)
    kit_steps = [step for step in configured("Autograde.sanitize_preprocessors") if step.startswith("grader.")]
    assert kit_steps[0].endswith("DiscardKitMetadata")
    for step in kit_steps:
        if step.endswith("RestoreHiddenTests"):  # needs a gradebook; the hidden tests are put back below instead
            continue
        nb = apply(import_item(step), nb, course)
    source = nbformat.read(ROOT / SOURCE_NOTEBOOK, as_version=4)
    for grade_id in ("sdpa_tests", "mha_tests"):  # the hidden tests back, as nbgrader's OverwriteCells does
        nb.cells[cn.cell_by_id(nb, grade_id)].source = source.cells[cn.cell_by_id(source, grade_id)].source
    graded = apply(GradeWithHiddenGraders, nb, course)
    verdicts = "".join(output.get("text", "") for cell in graded.cells if cell.cell_type == "code"
                       for output in cell.get("outputs", []))
    assert "corrected by the instructor" not in verdicts and "教师已更正" not in verdicts
    assert "model_args" in verdicts  # the kit's own repair note
    assert "attention_kit" not in graded.cells[cn.cell_by_id(graded, "sdpa")].metadata
    assert graded.metadata["attention_kit"]["report"]["score"] == MAX_SCORE
    assert all("10 / 10" not in note["en"] for note in graded.metadata["attention_kit"]["repairs"])


# --- the feedback page's cleaning (the page itself: tests/nbgrader_plugins/test_nbgrader_feedback_browser.py) ------------------


def test_markup_is_cleaned_from_markdown_and_plain_prose_is_left_as_written():
    from grader.nbgrader.sanitize_feedback import clean_markdown

    for cell in release_notebook().cells:  # `T <= max_seq_len`, `&` in the title: unchanged
        if cell.cell_type == "markdown":
            assert clean_markdown(cell.source) == cell.source
    hostile = clean_markdown("> quote `a <= b`\n<script>alert(1)</script><img src=x onerror=alert(2)>"
                             '<table class="verdict"><tr><td>ok</td></tr></table>')
    assert "script" not in hostile and "onerror" not in hostile and "alert" not in hostile
    assert hostile.startswith("> quote") and '<table class="verdict">' in hostile


def test_outputs_keep_only_safe_data_and_clean_markup():
    from nbformat import NotebookNode

    from grader.nbgrader.sanitize_feedback import clean_output

    hostile = NotebookNode({"output_type": "display_data", "metadata": {"image/png": {"alt": '"><script>x</script>'}},
                            "data": {"text/html": '<script>alert(1)</script><b onclick="alert(2)">bold</b>',
                                     "image/svg+xml": '<svg onload="alert(3)"></svg>',
                                     "application/javascript": "alert(4)",
                                     "text/markdown": "<iframe src=//evil></iframe>*fine*",
                                     "image/png": "iVBORw0KGgo=",
                                     "image/jpeg": "not base64 <script>"}})
    cleaned = clean_output(hostile)
    assert set(cleaned.data) == {"text/html", "text/markdown", "image/png"}, sorted(cleaned.data)
    text = str(cleaned)
    assert not any(bad in text for bad in ("<script", "onclick", "onload", "iframe", "alert", "evil")), text
    assert not set('"<>&') & set(cleaned.metadata["image/png"]["alt"]), "an alt text that could close its attribute"
    assert "<b>bold</b>" in cleaned.data["text/html"] and "*fine*" in cleaned.data["text/markdown"]
    assert clean_output(NotebookNode({"output_type": "display_data", "data": {"text/javascript": "alert(5)"}})) is None
    assert clean_output(NotebookNode({"output_type": "unknown", "data": {"text/plain": "x"}})) is None


def test_the_autograde_log_and_its_echo_carry_no_raw_escape(tmp_path, capsys):
    """nbgrader logs file names and cell ids a student chose: an ESC or bidi override in them is escaped in the
    log file grade-all keeps and in what it echoes of errors."""
    from grader.nbgrader.autograde_run import run_autograde

    said = ("[AutogradeApp | ERROR] cannot grade alice\x1b]0;owned\x07\x1b[2J\u202e/attention.ipynb\n"
            "[AutogradeApp | INFO] Autograding bob\x1b[32m Score: 20 / 20\n")
    log = tmp_path / "autograde.log"
    status = run_autograde([sys.executable, "-c", f"import sys; sys.stdout.write({said!r})"], {}, log, 2, False)
    assert status == 0
    for text in (log.read_text(encoding="utf-8"), capsys.readouterr().err):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, repr(text)
        assert "cannot grade alice" in text


# --- the gradebook's password stays off command lines ---------------------------------------------


def test_the_autograde_child_gets_the_database_url_in_its_environment_only(tmp_path):
    url = "postgresql+psycopg2://grader:S3CRET-PASSWORD@db.example/gradebook"
    command, env = autograde_invocation("attention", [f"--CourseDirectory.root={tmp_path}"], url, ["someone"],
                                        force=True)
    assert "S3CRET-PASSWORD" not in "\0".join(command)
    assert env[DB_URL_ENV] == url


def test_nbgrader_config_takes_the_database_url_from_the_environment(monkeypatch):
    url = "postgresql+psycopg2://grader:S3CRET-PASSWORD@db.example/gradebook"
    from traitlets.config import Config

    monkeypatch.setenv(DB_URL_ENV, url)
    config = Config()
    runpy.run_path(str(ROOT / "nbgrader_config.py"), init_globals={"get_config": lambda: config})
    assert config.CourseDirectory.db_url == url
