"""Are mechanical fixes found, verified by a real regrade, shown with the student's own line, and
credited only as the instructor says?

A fix is shown only when the edited copy, regraded in the sandbox with every check, earns more;
the tests check that claim independently by applying the shown edit to the student's file by hand
and grading that file.
"""
import json
import subprocess
import sys

import pytest

from support.hand_ins import header, own_order

from support.paths import REFERENCE, ROOT, SUBMISSIONS
from grader import fixes
from grader.exercises.attention import MAX_SCORE, PART
from grader.fixes.candidates import candidates
from grader.fixes.rewrites import REWRITES
from grader.checks import checks_for
from grader.grade import Grading, default_limits, grade, grade_submission
from grader.handin.source import load_submission
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.sandbox

MUTANTS = own_order([p for p in (SUBMISSIONS / "mutants").glob("*.py") if header(p, "expect") in REWRITES], __name__)
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))
HOSTILE = SUBMISSIONS / "fixes"


@pytest.fixture(scope="module")
def fix_cache(tmp_path_factory):
    """One report cache for this module: a submission graded by several tests (and each fix's regrade) runs once."""
    return tmp_path_factory.mktemp("report-cache")


def fixed_by_hand(path, fix, tmp_path):
    """The student's file with the shown edits applied (lines of a .py are the file's lines)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for edit in fix["edits"]:
        assert lines[edit["line"] - 1].strip() == edit["before"], "the fix names a line the student did not write"
        indent = lines[edit["line"] - 1][:len(lines[edit["line"] - 1]) - len(lines[edit["line"] - 1].lstrip())]
        lines[edit["line"] - 1] = indent + edit["after"]
    copy = tmp_path / path.name
    copy.write_text("\n".join(lines), encoding="utf-8")
    return copy


@pytest.mark.unit
def test_every_rule_has_mutants():
    assert {header(p, "expect") for p in MUTANTS} == set(REWRITES)


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_mutant_gets_its_fix_verified_and_shown_with_the_right_line(graded, path, tmp_path):
    """Is the fix for the mutant's mistake found, and does the shown edit, applied by hand, earn what it claims?"""
    report = graded(path)
    mistake = header(path, "expect")
    fix = next((f for f in report["fixes"] if mistake in f["mistakes"]), None)  # alone, or jointly with another
    assert fix is not None, f"{path.name}: no verified fix for {mistake}; fixes: {report['fixes']}"
    points, edits = f"{fix['points']:g} point{'' if fix['points'] == 1 else 's'}", len(fix["edits"])
    lines_en, lines_zh = ("one line", "只需改一行") if edits == 1 else (f"{edits} lines", f"改 {edits} 行")
    assert fix["message_en"].startswith(f"Change {lines_en} to gain {points}: line {fix['line']} → `{fix['after']}`")
    assert fix["message_zh"].startswith(f"{lines_zh}即可多得 {fix['points']:g} 分：第 {fix['line']} 行 → `{fix['after']}`")
    assert all(check in fix["message_en"] for check in fix["checks"])
    regraded = graded(fixed_by_hand(path, fix, tmp_path))
    passed = {c["id"] for c in regraded["checks"] if c["passed"]}
    assert set(fix["checks"]) <= passed
    assert regraded["score"] == pytest.approx(report["score"] + fix["points"])
    assert report["score"] < regraded["score"]
    assert report["fix_credit"] == {"fraction": 0.0, "points": 0, "by_part": {}}  # default: shown, not credited


@pytest.mark.unit
def test_a_joint_fix_edits_each_line_once_and_names_every_mistake_it_mends():
    from grader.fixes.candidates import Candidate, LineEdit
    scale = Candidate("missing-scale", (LineEdit(9, "s = q @ k", "s = q @ k / d ** 0.5"),))
    diagonal = Candidate("mask-diagonal", (LineEdit(4, "m = triu(o)", "m = triu(o, diagonal=1)"),))
    joint = fixes.jointly([scale, diagonal])
    assert [e.line for e in joint.edits] == [4, 9] and (joint.mistake, joint.also) == ("missing-scale", ("mask-diagonal",))
    assert fixes.jointly([scale]) is None
    assert fixes.jointly([scale, Candidate("wrong-scale", (LineEdit(9, "s = q @ k", "s = q @ k / d"),))]) is None


@pytest.mark.parametrize("path", [REFERENCE, *CORRECT], ids=["reference", *(p.stem for p in CORRECT)])
def test_correct_submission_gets_no_fix_and_full_marks(graded, path):
    report = graded(path)
    assert report["fixes"] == [] and report["score"] == MAX_SCORE


def grading_of(submission) -> Grading:
    """A grading as `grade` sets one up on this machine, with no report cache."""
    return Grading(submission, checks_for(exercise=EXERCISE), default_limits(), use_cuda=False)


@pytest.mark.parametrize("limit", ["timeout", "memory-limit", "tampering", "submission-too-costly"])
def test_a_hand_in_that_ran_out_of_a_limit_is_not_graded_again_for_fixes(limit):
    """The red team's cost_regrade: a hand-in over the grader's budget for its graphs was regraded for each fix
    candidate (four more times the budget, 125 s in all); a mistake with a rule beside the limit changes nothing."""
    report = {"mistakes": [limit, "missing-scale"], "checks": [{"points": 10.0}], "max_score": 20.0}
    assert fixes.fixable(report, {}) == []
    assert fixes.fixable({**report, "mistakes": ["missing-scale"]}, {}) == ["missing-scale"]


def test_an_edit_that_changes_nothing_on_correct_code_is_not_verified():
    """A candidate edit of a correct line (√d_k written another way) earns nothing, so it is not a fix."""
    submission = load_submission(REFERENCE)
    report = grade(submission)
    (candidate,) = candidates(submission.source, ["missing-scale"], {}, EXERCISE.graded_name)
    assert candidate.edits  # the edit is real, and applied
    assert fixes.verified(grading_of(submission), report, candidate) is None


def test_an_edit_alone_that_a_second_bug_keeps_from_helping_is_not_shown(graded):
    """Softmax over dim=-2 plus a mask writing 0 instead of -inf: fixing the softmax alone earns nothing."""
    path = HOSTILE / "softmax-dim-and-mask-multiplied.py"
    submission = load_submission(path)
    report = graded(path)
    (candidate,) = candidates(submission.source, ["softmax-dim"], {}, EXERCISE.graded_name)
    assert fixes.verified(grading_of(submission), report, candidate) is None
    assert report["fixes"] == []


def test_a_fix_a_decorator_hands_to_the_other_part_is_judged_on_both_parts():
    """Hostile (red team on issue 42): Part 1 leaves out the scale and Part 2 makes up for it, calling Part 1 through a
    registry a decorator fills. The missing-scale fix edits Part 1 alone, yet breaks Part 2: its regrade runs both
    parts (grader.fixes.reach), so the fix is neither shown nor credited."""
    report = grade_submission(HOSTILE / "registry-hands-part-one-to-part-two.py", fix_credit=0.5)
    assert "missing-scale" in report["mistakes"]
    assert report["fixes"] == [] and report["fix_credit"]["points"] == 0


def test_a_fix_the_code_sabotages_is_judged_on_the_regrade_and_never_shown_or_credited():
    """Hostile: the code reverses its own weights exactly when the softmax-dim fix is applied. The fix is
    tried (softmax-dim is diagnosed), regraded, and rejected on that regrade's verdict."""
    path = HOSTILE / "softmax-dim-sabotaged.py"
    tried = []
    report = grade_submission(path, fix_credit=1.0)
    assert "softmax-dim" in report["mistakes"]
    class Recorded(Grading):
        def regrade(self, copy):
            tried.append(copy)
            return super().regrade(copy)

    fixes.search(Recorded(load_submission(path), checks_for(exercise=EXERCISE), default_limits(), use_cuda=False), report)
    assert len(tried) == 1  # the candidate was really tried
    assert report["fixes"] == [] and report["fix_credit"]["points"] == 0
    assert report["score"] == sum(c["points"] for c in report["checks"])


def test_a_fix_shows_control_characters_of_the_students_line_as_escapes(graded):
    """Hostile: a terminal escape (clear screen, fake green score) and a right-to-left override in the edited line."""
    (fix,) = graded(HOSTILE / "bare-matmul-control-characters.py")["fixes"]
    for text in (fix["after"], fix["before"], fix["message_en"], fix["message_zh"]):
        assert "\x1b" not in text and "\u202e" not in text
        assert "\\x1b[2J" in text and "\\u202e" in text


@pytest.mark.parametrize("fraction", [0.0, 0.5, 1.0])
def test_fix_credit_awards_that_fraction_of_the_points_the_fixed_code_earns_per_part(fraction, fix_cache):
    """dropout-lowercase loses the whole MHA part; its fix earns it back; FRACTION of that counts."""
    path = SUBMISSIONS / "mutants" / "dropout-lowercase.py"
    report = grade_submission(path, cache=fix_cache, fix_credit=fraction)
    strict = sum(c["points"] for c in report["checks"])
    assert strict == MAX_SCORE - PART["mha"].points
    (fix,) = report["fixes"]
    assert fix["points"] == PART["mha"].points
    expected = fraction * PART["mha"].points
    assert report["fix_credit"] == {"fraction": fraction, "points": expected, "by_part": {"mha": expected} if expected else {}}
    assert report["score"] == strict + expected
    assert all(not c["passed"] for c in report["checks"] if c["part"] == "mha" and c["max_points"])  # verdicts stay strict


def test_a_fixs_regrade_is_cached_under_its_own_code_and_then_served_from_the_cache(tmp_path, monkeypatch):
    """The edited copy is another source, so another cache entry: the folder holds the original's report and the
    regrade's, and grading again runs nothing yet finds the same fix (a regrade keyed on the original's code
    would be served the original's report and find no fix)."""
    from grader import grade as grade_module

    path = SUBMISSIONS / "mutants" / "dropout-lowercase.py"
    first = grade_submission(path, cache=tmp_path, fix_credit=1.0)
    assert [f["mistake"] for f in first["fixes"]] == ["dropout-lowercase"]
    assert len(list(tmp_path.glob("*.json"))) == 2
    monkeypatch.setattr(grade_module, "_run_checks", lambda *args: pytest.fail("graded again, not read from the cache"))
    assert grade_submission(path, cache=tmp_path, fix_credit=1.0) == first


def test_fix_credit_never_takes_points_from_a_part():
    report = {"checks": [{"id": "a.x", "part": "a", "passed": True, "points": 3.0},
                         {"id": "b.x", "part": "b", "passed": False, "points": 0.0}]}
    fixed = {"checks": [{"id": "a.x", "part": "a", "passed": False, "points": 0.0},
                        {"id": "b.x", "part": "b", "passed": True, "points": 4.0}]}
    assert fixes.credit(report, fixed, 0.5) == {"fraction": 0.5, "points": 2.0, "by_part": {"b": 2.0}}


def test_cli_fix_credit_on_grade_and_grade_all(tmp_path):
    mutant = SUBMISSIONS / "mutants" / "dropout-lowercase.py"
    run = subprocess.run([sys.executable, "-m", "grader", "grade", str(mutant), "--json", "--fix-credit", "0.5"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["score"] == MAX_SCORE - PART["mha"].points / 2 and report["fix_credit"]["fraction"] == 0.5
    text = subprocess.run([sys.executable, "-m", "grader", "grade", str(mutant), "--lang", "en"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300).stdout
    assert "Verified fixes" in text and "line 54 → `self.attn_dropout = nn.Dropout(args.dropout)`" in text
    assert text.index("Verified fixes") < text.index("== Part 1")  # the fix first
    refused = subprocess.run([sys.executable, "-m", "grader", "grade", str(mutant), "--fix-credit", "2"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "between 0 and 1" in refused.stderr

    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "attention.py").write_bytes(mutant.read_bytes())
    out = tmp_path / "class.json"
    run = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(tmp_path), "--json", str(out),
                          "--fix-credit", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["score"] == MAX_SCORE and row["fix_credit"]["points"] == PART["mha"].points


def test_nbgrader_part_score_includes_the_credit_and_the_cell_shows_the_fix():
    from nbformat import NotebookNode

    from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders

    assert GradeWithHiddenGraders().fix_credit == 0.0  # the default: fixes shown, no points
    report = {"checks": [{"id": "mha.values", "part": "mha", "passed": False, "points": 0.0, "max_points": 10.0,
                          "mistakes": [], "message_zh": "", "message_en": "", "title_zh": "数值", "title_en": "values"}],
              "fixes": [{"checks": ["mha.values"], "message_zh": "把第 3 行改为 `x`，……", "message_en": "changing line 3"}],
              "fix_credit": {"fraction": 0.5, "points": 5.0, "by_part": {"mha": 5.0}}}
    cell = NotebookNode({"cell_type": "code", "source": 'grader.hidden.score_part("mha")', "outputs": [],
                         "metadata": {"nbgrader": {"points": 10.0, "grade_id": "mha_tests"}}})
    GradeWithHiddenGraders().write_outputs(cell, report, repairs=[], others=[])
    stream, score = cell.outputs
    assert "把第 3 行改为 `x`" in stream["text"] and "changing line 3" in stream["text"] and "+5" in stream["text"]
    assert score["data"]["text/plain"] == "5.0"


def test_nbgrader_notebook_fix_is_named_by_cell_and_credited_in_the_gradebook_score():
    """A notebook (mask-diagonal answers): the fix names the code cell and its line as the student sees them,
    and the test cell's score (what nbgrader records) includes the configured credit."""
    import copy

    from nbgrader import utils

    from support import colab_notebooks as cn
    from grader.nbgrader.grade_with_hidden_graders import GradeWithHiddenGraders
    from support.nbgrader_course import release_notebook, with_hidden_tests

    nb = with_hidden_tests(cn.answered(release_notebook(),
                                       cn.answers_from_python(SUBMISSIONS / "mutants" / "mask-diagonal.py")))
    nb, _ = GradeWithHiddenGraders(fix_credit=0.5).preprocess(
        copy.deepcopy(nb), {"nbgrader": {"student": "s", "assignment": "attention", "notebook": "attention"}})
    report = nb.metadata["attention_kit"]["report"]
    (fix,) = report["fixes"]
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    student_line = code_cells[fix["cell"] - 1].source.split("\n")[fix["line"] - 1]
    assert student_line.strip() == fix["before"] and "diagonal=0" in fix["before"] and "diagonal=1" in fix["after"]
    # Colab numbers no cells: the place is the cell that defines the graded name
    assert fix["defines"] == "scaled_dot_product_attention"
    assert f": the cell that defines `scaled_dot_product_attention`, line {fix['line']} → " in fix["message_en"]
    assert f"：定义 `scaled_dot_product_attention` 的单元格第 {fix['line']} 行 → " in fix["message_zh"]
    strict = sum(c["points"] for c in report["checks"] if c["part"] == "sdpa")
    sdpa_cell = next(c for c in nb.cells if c.cell_type == "code" and utils.is_grade(c) and '"sdpa"' in c.source)
    assert utils.determine_grade(sdpa_cell)[0] == pytest.approx(strict + 0.5 * fix["points"])
    assert fix["message_zh"] in sdpa_cell.outputs[0]["text"]


@pytest.mark.e2e
def test_grade_all_nbgrader_fix_credit_reaches_the_gradebook(tmp_path):
    """`grade-all COURSE --nbgrader attention --fix-credit 1`: the option reaches both the parallel grading
    and the one `nbgrader autograde` run, so the gradebook holds the credited score and agrees with the report."""
    from support import colab_notebooks as cn
    from grader.process import nbgrader_env
    from support.nbgrader_course import Course, mutant_notebook

    course = Course.create(tmp_path / "course")
    cn.write(mutant_notebook(course, "dropout-lowercase"), course.submitted("ann"))
    out = tmp_path / "reports.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(course.root), "--nbgrader", "attention",
                           "--json", str(out), "--fix-credit", "1"],
                          cwd=ROOT, env=nbgrader_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr  # 1 if the gradebook differed from the report
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["score"] == row["gradebook_score"] == MAX_SCORE and row["fix_credit"]["points"] == PART["mha"].points


def test_two_independent_fixes_are_each_shown_and_credited_together(fix_cache):
    report = grade_submission(HOSTILE / "bare-matmul-and-dropout-lowercase.py", cache=fix_cache, fix_credit=1.0)
    assert sorted(f["mistake"] for f in report["fixes"]) == ["bare-matmul", "dropout-lowercase"]
    assert sum(c["points"] for c in report["checks"]) < MAX_SCORE - PART["mha"].points  # both parts lost points
    assert report["score"] == MAX_SCORE and set(report["fix_credit"]["by_part"]) == {"sdpa", "mha"}
