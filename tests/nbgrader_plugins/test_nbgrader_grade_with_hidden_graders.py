"""Does GradeWithHiddenGraders grade the notebook in the sandbox and write outputs that nbgrader scores right?"""
from __future__ import annotations

import copy

import nbformat
import pytest
from nbformat.v4 import new_code_cell
from nbgrader import utils

from support import colab_notebooks as cn
from grader.exercises.attention import MAX_SCORE, PARTS
from grader.build.config import ROOT, SOURCE_NOTEBOOK
from grader.checks import checks_for
from grader.catalog import explain
from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders, code_as_submitted, part_of
from support.nbgrader_course import SUBMISSIONS, release_notebook, with_hidden_tests

pytestmark = pytest.mark.sandbox

HIDDEN = {part: f'### BEGIN HIDDEN TESTS\nimport grader.hidden\ngrader.hidden.score_part("{part}")\n### END HIDDEN TESTS'
          for part in ("sdpa", "mha")}


def grade_notebook(nb):
    nb, _ = GradeWithHiddenGraders().preprocess(
        copy.deepcopy(nb), {"nbgrader": {"student": "someone", "assignment": "attention", "notebook": "attention"}})
    return nb


def cell_of(nb, grade_id):
    return nb.cells[cn.cell_by_id(nb, grade_id)]


@pytest.fixture(scope="module")
def markers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("markers")
    return folder / "top-level-ran", folder / "definition-ran"


@pytest.fixture(scope="module")
def correct(markers):
    """The reference answers, plus a last cell whose code must never run in nbgrader's process."""
    nb = with_hidden_tests(cn.answered(release_notebook(), cn.reference_answers()))
    top_level, definition = markers
    nb.cells.append(new_code_cell(
        f"import pathlib\npathlib.Path({str(top_level)!r}).write_text('ran')\n\n"
        f"def _sneaky(x=open({str(definition)!r}, 'w')):\n    return x\n"))
    return grade_notebook(nb)


@pytest.fixture(scope="module")
def mask_diagonal():
    release = release_notebook()
    answers = cn.answers_from_python(SUBMISSIONS / "mutants" / "mask-diagonal.py")
    return grade_notebook(with_hidden_tests(cn.answered(release, answers)))


@pytest.mark.e2e
def test_a_correct_notebook_gets_every_point(correct):
    """Does nbgrader read full marks for both test cells of the reference answers?"""
    for part in PARTS:
        assert utils.determine_grade(cell_of(correct, part.tests_cell)) == (part.points, part.points)


@pytest.mark.e2e
def test_student_code_never_runs_in_nbgraders_process(correct, markers):
    """Is the notebook graded as text in the sandbox: top-level code never runs, definitions only in the worker?"""
    assert not any(marker.exists() for marker in markers)


@pytest.mark.e2e
def test_outputs_are_stdout_picture_and_score_never_an_error(mask_diagonal):
    """Does a test cell get a stdout stream, a picture for a mask mistake, then the score, and no error or stderr?"""
    kinds = [o.output_type for o in cell_of(mask_diagonal, "sdpa_tests").outputs]
    assert kinds == ["stream", "display_data", "execute_result"]
    assert [o.output_type for o in cell_of(mask_diagonal, "mha_tests").outputs] == ["stream", "execute_result"]
    for cell in (cell_of(mask_diagonal, "sdpa_tests"), cell_of(mask_diagonal, "mha_tests")):
        assert all(o.output_type != "error" and o.get("name") != "stderr" for o in cell.outputs)
    picture = cell_of(mask_diagonal, "sdpa_tests").outputs[1]
    assert picture.data["image/png"].startswith("iVBORw0KGgo")  # base64 of the PNG signature
    assert picture.metadata["image/png"]["alt"]


@pytest.mark.e2e
def test_nbgrader_reads_the_reports_part_scores(mask_diagonal):
    """Is the score nbgrader reads from each test cell the report's score for that part?"""
    report = mask_diagonal.metadata["attention_kit"]["report"]
    for part in PARTS:
        expected = sum(c["points"] for c in report["checks"] if c["part"] == part.id)
        assert utils.determine_grade(cell_of(mask_diagonal, part.tests_cell)) == (expected, part.points)
    assert "mask-diagonal" in report["mistakes"] and report["score"] < MAX_SCORE


@pytest.mark.e2e
def test_the_output_explains_the_mistake_in_both_languages(mask_diagonal):
    """Does the stdout carry each failed check's verdict and the zh and en diagnosis, each explanation once?"""
    text = cell_of(mask_diagonal, "sdpa_tests").outputs[0].text
    assert "✗ [0/2]" in text and "sdpa.causal_zeros" in text
    assert "对角线被遮蔽" in text and "Diagonal masked too" in text
    assert text.count("Diagonal masked too") == 1 and "(explained above)" in text


@pytest.mark.e2e
def test_the_verdict_is_one_line_per_paragraph(mask_diagonal):
    """Is each diagnosis one whole line, left for the notebook or page to wrap, so no line starts with 、 or 。?"""
    lines = [line.strip() for line in cell_of(mask_diagonal, "sdpa_tests").outputs[0].text.splitlines()]
    assert explain("mask-diagonal", "zh") in lines
    assert explain("mask-diagonal", "en") in lines
    assert not [line for line in lines if line.startswith(("、", "。"))]


def test_graded_code_is_the_students_without_the_restored_hidden_blocks():
    """Are hidden blocks left out of the test cells only, never out of a student's own cell that happens to hold the markers?"""
    release = release_notebook()
    nb = with_hidden_tests(release)
    nb.cells.append(new_code_cell("### BEGIN HIDDEN TESTS\ndef helper():\n    return 1\n### END HIDDEN TESTS"))
    code = code_as_submitted(nb)
    assert code[:-1] == [cell.source for cell in release.cells if cell.cell_type == "code"]
    assert "def helper" in code[-1]


def fake_report(part: str, earned: float, maximum: float) -> dict:
    return {"score": earned, "max_score": maximum, "mistakes": [], "checks": [
        {"id": f"{part}.a", "part": part, "title_zh": "甲", "title_en": "a", "passed": earned == maximum, "points": earned,
         "max_points": maximum, "message_zh": "错", "message_en": "wrong", "mistakes": []}]}


def grade_cell(source: str, points: float):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": points, "solution": False, "locked": True}
    return cell


def test_a_test_cell_worth_other_points_is_scaled():
    """When a cell is worth 5 points and its part's checks sum to 10, is 6/10 written as 3?"""
    cell = grade_cell(HIDDEN["sdpa"], 5)
    GradeWithHiddenGraders().write_outputs(cell, fake_report("sdpa", 6, 10), [], [])
    assert utils.determine_grade(cell) == (3.0, 5.0)


def test_a_test_cell_naming_no_part_scores_zero_not_full_marks():
    """Does a grade cell that calls no grader part get 0 (nbgrader would give full marks to a cell without outputs)?"""
    cell = grade_cell("assert True", 10)
    GradeWithHiddenGraders().write_outputs(cell, fake_report("sdpa", 10, 10), [], [])
    assert utils.determine_grade(cell) == (0.0, 10.0)


def test_source_test_cells_are_worth_their_parts_checks():
    """Are the source notebook's test cells worth exactly the sum of the grader's checks for their part?"""
    nb = nbformat.read(ROOT / SOURCE_NOTEBOOK, as_version=4)
    cells = [cell for cell in nb.cells if cell.get("metadata", {}).get("nbgrader", {}).get("grade")]
    assert {part_of(cell) for cell in cells} == {"sdpa", "mha"}
    for cell in cells:
        assert cell.metadata.nbgrader.points == sum(c.points for c in checks_for(part_of(cell)))


def test_a_long_reason_is_never_broken_by_hand():
    """Does a long zh reason full of 、 and 。 stay one line of the stdout (the browser wraps it), never starting one?"""
    cell = grade_cell(HIDDEN["sdpa"], 10)
    report = fake_report("sdpa", 6, 10)
    reason = "因果掩码把对角线也遮住了、于是每个词元看不到它自己。" * 12
    report["checks"][0]["message_zh"] = reason
    GradeWithHiddenGraders().write_outputs(cell, report, [{"zh": reason, "en": "repaired " * 40}], [])
    lines = [line.strip() for line in cell.outputs[0].text.splitlines()]
    assert lines.count(reason) == 1 and "- " + reason in lines
    assert not [line for line in lines if line.startswith(("、", "。"))]


def test_score_output_shows_the_part_and_score_once_escaped_and_still_scores():
    """Is the score output the part's name and score (escaped), no table repeating the verdicts the stdout
    gives, and does nbgrader still read its text/plain?"""
    cell = grade_cell(HIDDEN["sdpa"], 10)
    report = fake_report("sdpa", 6, 10)
    report["checks"][0]["message_zh"] = "<script>alert(1)</script> 错"
    GradeWithHiddenGraders().write_outputs(cell, report, [], [])
    result = next(o for o in cell.outputs if o.output_type == "execute_result")
    assert result.data["text/plain"] == "6.0" and utils.determine_grade(cell) == (6.0, 10.0)
    page = result.data["text/html"]
    assert "Part 1 · scaled_dot_product_attention：6 / 10 分" in page
    assert "<table" not in page and "错" not in page and "<script>" not in page and "style=" not in page
    assert cell.outputs[0].text.count("错") == 1  # the verdict once, in the stdout


def failing(check_id: str, zh: str, en: str, max_points: float = 1.0) -> dict:
    return {"id": check_id, "part": "mha", "title_zh": "甲", "title_en": "a", "passed": False, "points": 0.0,
            "max_points": max_points, "message_zh": zh, "message_en": en, "mistakes": []}


def test_a_repeated_error_is_said_once_with_a_count():
    """Five checks meeting the same crash: the message once, with how many more checks met it, then a pointer."""
    crash = ("运行时出错：RuntimeError: view size is not compatible", "it raised RuntimeError: view size is not compatible")
    checks = [failing(f"mha.c{i}", *crash) for i in range(5)] + [failing("mha.other", "别的", "other")]
    cell = grade_cell(HIDDEN["mha"], 10)
    GradeWithHiddenGraders().write_outputs(cell, {"score": 0, "max_score": 6, "mistakes": [], "checks": checks}, [], [])
    text = cell.outputs[0].text
    assert text.count("view size is not compatible") == 2  # zh and en, once each
    assert "The same problem failed 4 more checks: mha.c1, mha.c2, mha.c3, mha.c4" in text
    assert text.count("同上，见 mha.c0 · same as mha.c0") == 4 and "other" in text


def test_a_check_that_held_in_a_zeroed_part_shows_no_tick_and_says_why():
    """A gate failed (the part scores 0): a check that held is marked ○ with the gate named, never ✓ [0/1]."""
    gate = failing("mha.own_implementation", "用了 nn.MultiheadAttention。", "Uses nn.MultiheadAttention.", max_points=0.0)
    held = {**failing("mha.shapes", "", ""), "passed": True, "message_zh": "形状都对。", "message_en": "Shapes right."}
    cell = grade_cell(HIDDEN["mha"], 10)
    GradeWithHiddenGraders().write_outputs(cell, {"score": 0, "max_score": 1, "mistakes": [], "checks": [gate, held]}, [], [])
    text = cell.outputs[0].text
    assert "✓" not in text
    assert "○ [0/1] mha.shapes  甲 · a  （不计分：mha.own_implementation 未通过） · (not counted: mha.own_implementation failed)" in text


def test_a_missing_contiguous_page_quotes_the_error_once_per_language_after_the_fix(graded):
    """The feedback text of the real missing-contiguous report: the RuntimeError once in zh and once in en (not once
    per check it broke), and the verified one-line fix above the first check."""
    report = graded(SUBMISSIONS / "mutants" / "missing-contiguous.py")
    cell = grade_cell(HIDDEN["mha"], 10)
    GradeWithHiddenGraders().write_outputs(cell, report, [], [])
    text = cell.outputs[0].text
    assert text.count("view size is not compatible") == 2, text  # zh and en, once each
    assert text.count("只需改一行即可多得") == 1 and text.count("Change one line to gain") == 1, text
    assert text.index("只需改一行即可多得") < text.index(" mha.computes_attention "), text


def test_the_untouched_notebooks_not_implemented_is_said_once_per_part_and_language(graded):
    """The release notebook as handed out: one NotImplementedError per part and language, not one per check."""
    report = graded(ROOT / "release" / "attention" / "attention.ipynb")
    for part in ("sdpa", "mha"):
        cell = grade_cell(HIDDEN[part], 10)
        GradeWithHiddenGraders().write_outputs(cell, report, [], [])
        text = cell.outputs[0].text
        quoted = [line for line in text.splitlines() if "出错：NotImplementedError" in line or "while" in line
                  and "NotImplementedError" in line]
        assert len(quoted) == 2, text
