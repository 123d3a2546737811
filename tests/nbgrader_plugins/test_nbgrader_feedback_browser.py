"""Does a student who opens their feedback page in a real browser see their score and the diagnosis, and no hidden tests?
And does nothing a student wrote into their notebook run in that page?

Renders the mask-diagonal student's page of the shared class (tests/support/nbgrader_course.py) with
headless Chromium (Debian's, installed by `make test-setup`), reads the
text the browser shows (`--dump-dom`) and keeps a screenshot in artifacts/ (git-ignored).
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import nbformat

from support import colab_notebooks as cn
from support import e2e_tools
from grader.exercises.attention import MAX_SCORE
from grader.build.config import ASSIGNMENT, ROOT
from grader.catalog import explain
from support.capabilities import lacking
from support.nbgrader_course import Course, correct_notebook, shared_class
from support.feedback_page import DOCUMENTED_POLICY

pytestmark = pytest.mark.e2e
ARTIFACTS = ROOT / "artifacts"
STUDENT = "mask-diag.1"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def chromium() -> str:
    found = e2e_tools.chromium()
    if found is None:
        lacking("chromium", f"Chromium is not installed: {e2e_tools.SETUP_HINT}")
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return shared_class(tmp_path_factory)


@pytest.fixture(scope="module")
def page(run) -> Path:
    return run.course.feedback(STUDENT)


def browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def test_the_student_sees_score_and_diagnosis(chromium, run, page, tmp_path):
    """Does the rendered page read (as text in the browser) the score, the failed check, and the zh and en diagnosis?"""
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    soup = BeautifulSoup(done.stdout, "html.parser")
    for hidden in soup(["script", "style"]):
        hidden.decompose()
    text = " ".join(soup.get_text(" ").split())
    scores = run.course.scores()[STUDENT]
    total, part1 = run.course.total(STUDENT), scores["sdpa_tests"][0]
    assert part1 < 10
    assert f"Score: {total:.1f} / {MAX_SCORE:.1f}" in text  # nbgrader's page header
    assert f"Part 1 · scaled_dot_product_attention：{part1:g} / 10 分" in text  # our verdict text
    assert "✗ [0/2] sdpa.causal_zeros 因果掩码" in text  # the head every report prints: mark, points, id, titles
    assert "对角线被遮蔽" in text and "Diagonal masked too" in text
    assert "diagonal=1" in text
    assert "HIDDEN TESTS" not in text and "grader.hidden" not in text
    images = [img.get("alt", "") for img in soup.find_all("img")]
    assert any("your attention weights" in alt for alt in images)
    # each verdict once: the check's title appears in the stdout verdict only, no table repeats it
    assert text.count("因果掩码：未来位置权重恰为 0，每行和为 1") == 1
    assert not [t for t in soup.find_all("table") if "检查 · check" in t.get_text()]
    assert "mask-diagonal" in text
    assert "SELFCHECK_MISTAKES" not in text and "lines of provided self-check code, omitted" in text


def test_verdict_text_is_wrapped_by_the_browser_not_by_hand(chromium, page, tmp_path):
    """Is each stdout verdict paragraph one line (no line starting with 、 or 。) that the page's style wraps?"""
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    soup = BeautifulSoup(done.stdout, "html.parser")
    verdicts = [pre.get_text() for pre in soup.select("div.output_stdout pre") if "sdpa.causal_zeros" in pre.get_text()]
    lines = [line.strip() for line in verdicts[0].splitlines()]
    assert explain("mask-diagonal", "zh") in lines
    assert not [line for line in lines if line.startswith(("、", "。"))]
    assert any("div.output_text pre" in style.get_text() and "pre-wrap" in style.get_text()
               for style in soup.find_all("style"))


def test_a_screenshot_is_kept_as_an_artifact(chromium, page, tmp_path):
    """Does the browser paint the page (verdicts and the weights picture), kept as artifacts/feedback-<student>.png?"""
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"feedback-{STUDENT}.png"
    shot.unlink(missing_ok=True)
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--window-size=1280,9000",
                  f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 200_000  # a painted page, not a blank one


def test_the_math_in_the_prose_reads_without_mathjax(chromium, page, tmp_path):
    """With every script forbidden, does the formula read as text (√d with a subscript k), no raw LaTeX?"""
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    soup = BeautifulSoup(done.stdout, "html.parser")
    prose = " ".join(cell.get_text(" ") for cell in soup.select("div.text_cell_render"))
    assert "√d<sub>k</sub>" in done.stdout and "QK<sup>⊤</sup>" in done.stdout
    assert "softmax(" in prose and "√" in prose
    assert "\\sqrt" not in prose and "\\frac" not in prose and "\\top" not in prose


HOSTILE = "hostile"
PAYLOAD = ("document.title = 'PWNED'; "
           "document.body.insertAdjacentHTML('beforeend', '<p id=\\'pwned\\'>PWNED</p>');")
"""What a student's script would do to the page: retitle it and add an element."""


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory) -> Path:
    """A correct notebook whose markdown and raw cells carry script, an onerror handler and a remote image,
    and whose metadata carries markup: autograded and given its feedback page, as an instructor would."""
    course = Course.create(tmp_path_factory.mktemp("hostile-feedback"))
    nb = correct_notebook(course)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(
        "My notes: harmless prose stays.\n\n"
        f"<script>{PAYLOAD}</script>\n\n"
        f'<img src="x" onerror="{PAYLOAD.replace(chr(34), chr(39))}">\n\n'
        '<img src="https://example.invalid/track.png"> <a href="javascript:alert(1)">click</a>'))
    nb.cells.insert(2, nbformat.v4.new_raw_cell(f"<script>{PAYLOAD}</script>", metadata={"format": "text/html"}))
    nb.metadata["title"] = "</title><script>document.title='PWNED'</script>"
    cn.write(nb, course.submitted(HOSTILE))
    course.nbgrader("autograde", ASSIGNMENT)
    course.nbgrader("generate_feedback", ASSIGNMENT)
    return course.feedback(HOSTILE)


def test_no_script_from_the_notebook_runs_in_the_page(chromium, hostile_page, tmp_path):
    """Rendered in Chromium: the title is the page's own, no element the script would add exists, the student's
    markup is gone, the page carries its Content-Security-Policy, and the verdicts and prose still read."""
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--dump-dom", hostile_page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    soup = BeautifulSoup(done.stdout, "html.parser")
    assert "PWNED" not in (soup.title.string or "")
    assert soup.find(id="pwned") is None
    assert not soup.find_all(attrs={"onerror": True})
    assert not soup.find_all("a", href=re.compile(r"^\s*javascript:", re.I))
    assert not soup.find_all("img", src=re.compile(r"example\.invalid"))  # markdown's own images: the policy
    assert not [s for s in soup.find_all("script") if "PWNED" in s.get_text()]
    policy = soup.find("meta", attrs={"http-equiv": "Content-Security-Policy"})
    assert policy is not None and policy["content"] == DOCUMENTED_POLICY
    text = " ".join(soup.get_text(" ").split())
    assert "harmless prose stays" in text
    assert "Part 1 · scaled_dot_product_attention：10 / 10 分" in text


def test_the_hostile_page_is_kept_as_a_screenshot(chromium, hostile_page, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / f"feedback-{HOSTILE}.png"
    shot.unlink(missing_ok=True)
    done = browse(chromium, tmp_path / "profile", "--virtual-time-budget=10000", "--window-size=1280,4000",
                  f"--screenshot={shot}", hostile_page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
