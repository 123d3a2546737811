"""Do the kv_cache lab's Part 1 graders (grader/checks/repeat/) give every honest `repeat_kv` its 4 points and name
each mistake of the Part 1 mutants, in Chinese and in English?

Graded through the real pipeline (`grade_submission`: the exercise read from the hand-in's code, the worker tracing
on decoys, the judge re-running each graph on the parent's own inputs); each repository hand-in graded whole once and
read for Part 1's checks (tests/support/part_views.py).
"""
import functools
from pathlib import Path

import pytest

from grader.errors import NoGraders

from grader.catalog import catalog, explain
from grader.checks import Context, checks_for, secret
from grader.checks.repeat.behaviour import VALUE_CASES, wide_model
from grader.exercises import Exercise, Part, exercise
from grader.grade import grade_submission
from support import part_views
from support.hand_ins import edited, header
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

KV_CACHE = SUBMISSIONS / "kv_cache"
CORRECT = sorted((KV_CACHE / "correct").glob("*.py"))
MUTANTS = [path for path in sorted((KV_CACHE / "mutants").glob("*.py")) if header(path, "part") == "repeat"]
STUBS = KV_CACHE / "mutants" / "not-implemented.py"  # the notebook's three stubs, untouched
PLAIN = KV_CACHE / "correct" / "repeat_interleave_slice_plain.py"
PLAIN_BODY = """    if n_rep == 1:
        return x
    return torch.repeat_interleave(x, n_rep, dim=1)  # (B, H, T, d)"""


@functools.cache
def graded(path: Path) -> dict:
    return part_views.report(path, "repeat")


def failures(report: dict) -> str:
    return "\n".join(f"{c['id']} {c['mistakes']}: {c['message_en'][:600]}" for c in report["checks"] if not c["passed"])


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_every_honest_repeat_kv_scores_the_full_four_points(path):
    report = graded(path)
    assert report["score"] == report["max_score"] == 4.0, failures(report)
    assert report["mistakes"] == []
    assert {c["part"] for c in report["checks"]} == {"repeat", "integrity"}  # the sandbox's own, graded everywhere


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages(path):
    expected = header(path, "expect")
    report = graded(path)
    assert report["score"] < 4.0, f"{path.name} got full marks"
    assert expected in report["mistakes"], f"{path.name}: expected {expected}\n{failures(report)}"
    naming = [c for c in report["checks"] if expected in c["mistakes"]]
    assert naming and all(not c["passed"] for c in naming)
    for check in naming:
        zh, en = check["message_zh"].splitlines(), check["message_en"].splitlines()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh[0]) and en[0] != zh[0], check["id"]
        assert explain(expected, "zh") in zh and explain(expected, "en") in en, check["id"]


def test_the_tiled_order_says_which_heads_went_where():
    report = graded(KV_CACHE / "mutants" / "repeat-kv-order.py")
    values = next(c for c in report["checks"] if c["id"] == "repeat.values")
    assert "hold input heads [0, 1, 0, 1], expected [0, 0, 1, 1]" in values["message_en"]
    assert "依次是输入的第 [0, 1, 0, 1] 个头，应为 [0, 0, 1, 1]" in values["message_zh"]


def test_the_untouched_stubs_score_zero_with_not_implemented():
    report = graded(STUBS)
    assert report["score"] == 0.0
    assert "not-implemented" in report["mistakes"]
    assert all(not c["passed"] for c in report["checks"] if c["max_points"] > 0)


@pytest.mark.unit
def test_part_one_is_declared_with_four_points_in_public_and_hidden_checks():
    checks = checks_for("repeat")
    assert sum(c.points for c in checks) == exercise("kv_cache").part["repeat"].points == 4.0
    assert {c.visibility for c in checks} == {"public", "hidden"}
    assert {c.id for c in checks if c.gate} == {"repeat.own_implementation", "repeat.rules"}  # as every part has
    assert len({c.id for c in checks}) == len(checks)


@pytest.mark.unit
def test_an_exercise_with_a_part_without_graders_fails_loudly_and_a_part_alone_grades():
    """A part's own checks import its package alone; the exercise's whole list is refused, naming the missing one."""
    repeat = exercise("kv_cache").part["repeat"]
    unfinished = Exercise("unfinished", (repeat, Part("no_graders_yet", 2, "Nothing", "", "", "", 1.0, "part2")), (), "",
                          (), ())
    with pytest.raises(NoGraders, match="grader/checks/no_graders_yet/"):
        checks_for(exercise=unfinished)
    assert [c.part for c in checks_for("repeat")] == ["repeat"] * 7


@pytest.mark.unit
def test_the_ids_part_one_names_are_in_the_catalog():
    assert {header(path, "expect") for path in MUTANTS} <= set(catalog())


def with_repeat_kv(tmp_path: Path, name: str, body: str) -> Path:
    """The plain honest hand-in with repeat_kv's body replaced (its other parts unchanged)."""
    return edited(PLAIN, tmp_path, name, PLAIN_BODY, body)


def failed_checks(report: dict) -> dict[str, list[str]]:
    return {c["id"]: c["mistakes"] for c in report["checks"] if not c["passed"]}


def test_a_head_map_made_on_the_cpu_that_indexes_the_input_keeps_full_marks(tmp_path):
    """Honest: CUDA tensors take CPU indices, so the stand-ins for a GPU must not refuse it."""
    report = graded(with_repeat_kv(tmp_path, "cpu_head_map", "    head_map = torch.arange(x.size(1) * n_rep) // n_rep\n"
                                                             "    return x[:, head_map]"))
    assert report["score"] == 4.0, failures(report)


def test_the_tiled_order_taken_only_past_the_fixed_cases_sizes_is_found_on_a_wide_model(tmp_path):
    """A repeat_kv right at every fixed case's size (up to 12 heads) and tiled past it: the wide model drawn per grading
    meets it (red team on the second lab: 20 against its twin's 11.5)."""
    report = graded(with_repeat_kv(tmp_path, "tiled_when_wide", "    if x.size(1) * n_rep > 12:\n"
                                                                "        return x.repeat(1, n_rep, 1, 1)\n" + PLAIN_BODY))
    assert failed_checks(report).get("repeat.values") == ["repeat-kv-order"], failures(report)


@pytest.mark.unit
def test_the_wide_model_is_wider_than_every_fixed_case_under_every_secret():
    """The test above holds under any grading secret only where no draw is as narrow as a fixed case (a draw of 12
    heads, one in thirty, let the tiled order through)."""
    widest_fixed = max(H_kv * n_rep for _, H_kv, _, _, n_rep in VALUE_CASES)
    narrowest = min(H_kv * n_rep for _, H_kv, _, _, n_rep in
                    (wide_model(Context(student=None, static={}, cuda=False, secret=s)) for s in range(300)))
    assert narrowest > widest_fixed


def test_repeating_along_the_positions_is_the_wrong_shape_and_nothing_else_is_blamed_on_it(tmp_path):
    report = graded(with_repeat_kv(tmp_path, "positions", "    return torch.repeat_interleave(x, n_rep, dim=2)"))
    shapes = next(c for c in report["checks"] if c["id"] == "repeat.shapes")
    assert shapes["mistakes"] == ["wrong-return"] and "should have shape (2, 8, 5, 8), got (2, 2, 20, 8)" in shapes["message_en"]
    gradients = next(c for c in report["checks"] if c["id"] == "repeat.gradients")
    assert gradients["mistakes"] == [] and "see repeat.shapes" in gradients["message_en"]  # no raw autograd error


def test_an_output_made_on_the_cpu_costs_the_device_points_alone(tmp_path):
    """A GPU copies x into a CPU tensor without a word: only the stand-ins' report of the output's device shows it."""
    report = graded(with_repeat_kv(tmp_path, "cpu_output", "    B, H_kv, T, d = x.shape\n"
                                                           "    out = torch.zeros(B, H_kv * n_rep, T, d)\n"
                                                           "    out[:] = x.repeat_interleave(n_rep, dim=1)\n"
                                                           "    return out"))
    assert failed_checks(report) == {"repeat.device": ["hardcoded-device"]}
    assert report["score"] == 3.5


def test_values_taken_out_to_python_earn_nothing(tmp_path):
    """x.tolist() answers from the decoys the worker traced on: the graph does not follow the parent's inputs."""
    report = graded(with_repeat_kv(tmp_path, "python_values", "    return torch.tensor(x.tolist()).repeat_interleave(n_rep, 1)"))
    assert report["score"] == 0.0 and "untraceable" in report["mistakes"], failures(report)


def test_an_import_in_repeat_kv_breaks_the_rules_and_zeroes_the_part(tmp_path):
    report = graded(with_repeat_kv(tmp_path, "import_os", "    import os\n    return x.repeat_interleave(n_rep, 1)"))
    assert report["score"] == 0.0
    assert failed_checks(report)["repeat.rules"] == ["forbidden-import"]


@pytest.mark.parametrize("layer", ["every rule on", "only the judge"])
def test_the_built_in_attention_in_repeat_kv_zeroes_the_part(tmp_path, monkeypatch, request, layer):
    """The static rule, the worker's refusal or, with both off, the judge reading the graph: the part scores 0."""
    path = with_repeat_kv(tmp_path, "built_in", "    F.scaled_dot_product_attention(x, x, x)\n"
                                                "    return x.repeat_interleave(n_rep, 1)")
    if layer == "only the judge":
        request.getfixturevalue("rules_bypassed")
        report = grade_submission(path, checks=checks_for("repeat"))  # afresh: the cache's key holds no switch
        assert failed_checks(report)["repeat.own_implementation"] == ["forbidden-api"]
    else:
        report = graded(path)
        assert failed_checks(report)["repeat.rules"] == ["forbidden-api"]
    assert report["score"] == 0.0


@pytest.mark.parametrize("name", ["correct/stack_groups_provided_sdpa_for_the_prompt", "mutants/repeat-kv-order__2",
                                  "mutants/python-loop__3"])
def test_the_verdict_is_the_same_under_two_grading_secrets(monkeypatch, name):
    """Sizes, layouts, regimes and values are drawn per grading (grader/checks/secret.py): none may change a verdict."""
    verdicts = []
    for drawn in (11, 987654321):
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", drawn)
        report = grade_submission(KV_CACHE / f"{name}.py", checks=checks_for("repeat"))  # afresh: no cache holds a secret
        verdicts.append((report["score"], report["mistakes"]))
    assert verdicts[0] == verdicts[1]
