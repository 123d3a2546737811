"""Is a report language-neutral until it is projected or rendered, with its mistakes in fix-first order?

grader.report.json_report and grader.catalog on fixed outcomes: no sandbox.
"""
import json

import pytest

from grader.exercises import attention
from grader.catalog import FIX_FIRST, catalog, explain, fix_first
from grader.checks import PARTS, Check, Outcome
from grader.grade_all.text import class_summary
from grader.report.json_report import build_report
from grader.report.text import in_language, render_text

pytestmark = pytest.mark.unit

SDPA, MHA = (part.id for part in attention.PARTS[:2])
CONTRACT_CHECK_FIELDS = {"id", "part", "passed", "points", "max_points", "message", "mistakes"}


def spec(id: str, part: str, points: float, gate: bool = False) -> Check:
    return Check(id, part, points, "hidden", f"标题 {id}", f"title {id}", lambda ctx: None, gate)


def fixed_report() -> dict:
    return build_report([
        (spec(f"{SDPA}.loop", SDPA, 1.0), Outcome(False, "算子数量随形状增长。", "The op count grows.", ["python-loop"])),
        (spec(f"{SDPA}.values", SDPA, 3.0), Outcome(False, "权重不对。", "Wrong weights.", ["mask-diagonal"],
                                                   {"line": 7, "text": "mask = triu(ones, 0)", "cell": 2})),
        (spec(f"{SDPA}.half", SDPA, 1.0), Outcome(True, "float16 报错。", "float16 raises.", advice=["mask-value-overflow"])),
        (spec(f"{MHA}.loads", MHA, 2.0), Outcome(False, "语法错误。", "Syntax error.", ["syntax-error"])),
    ])


def test_the_report_holds_both_languages_and_no_projected_text():
    report = fixed_report()
    for check in report["checks"]:
        assert not {"message", "title"} & set(check)
        assert check["title_zh"].startswith("标题") and check["title_en"].startswith("title")
    values = report["checks"][1]
    assert values["message_zh"].startswith("权重不对。") and explain("mask-diagonal", "zh") in values["message_zh"]
    assert values["message_en"].startswith("Wrong weights.") and explain("mask-diagonal", "en") in values["message_en"]
    assert "从上往下第 2 个代码单元格第 7 行" in values["message_zh"] and "code cell 2 from the top, line 7" in values["message_en"]
    json.dumps(report)  # cacheable as it is


def test_mistakes_are_ordered_fix_first_not_alphabetically():
    """A syntax error stops everything, a wrong mask costs values, a loop only speed: fixed in that order."""
    assert fixed_report()["mistakes"] == ["syntax-error", "mask-diagonal", "python-loop"]


def test_advice_is_top_level_costs_nothing_and_is_not_a_mistake():
    report = fixed_report()
    assert report["advice"] == ["mask-value-overflow"] and "mask-value-overflow" not in report["mistakes"]
    half = next(c for c in report["checks"] if c["id"] == f"{SDPA}.half")
    assert half["points"] == half["max_points"] == 1.0
    assert report["score"] == 1.0 and report["max_score"] == 7.0


def test_an_id_that_also_cost_points_is_a_mistake_not_advice():
    report = build_report([
        (spec("a", SDPA, 1.0), Outcome(True, advice=["mask-value-overflow"])),
        (spec("b", SDPA, 1.0), Outcome(False, "", "", ["mask-value-overflow"])),
    ])
    assert report["mistakes"] == ["mask-value-overflow"] and report["advice"] == []


def test_a_failed_gate_zeroes_its_part_only():
    report = build_report([(spec("g", SDPA, 0.0, gate=True), Outcome(False, "", "", ["forbidden-api"])),
                           (spec("s", SDPA, 4.0), Outcome(True)), (spec("m", MHA, 3.0), Outcome(True))])
    assert [c["points"] for c in report["checks"]] == [0.0, 0.0, 3.0]


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_json_projection_is_the_contract_in_one_language(lang):
    report = fixed_report()
    projected = in_language(report, lang)
    assert {"score", "max_score", "checks", "mistakes", "advice"} <= set(projected)
    for neutral, check in zip(report["checks"], projected["checks"]):
        assert CONTRACT_CHECK_FIELDS <= set(check)
        assert check["message"] == neutral[f"message_{lang}"] and check["title"] == neutral[f"title_{lang}"]
    assert projected["mistakes"] == report["mistakes"] and report["checks"][0].get("message") is None  # a copy


@pytest.mark.parametrize("lang, other", [("zh", "en"), ("en", "zh")])
def test_rendered_text_is_in_one_language(lang, other):
    report = fixed_report()
    text = render_text(report, lang)
    values = report["checks"][1]
    assert values[f"message_{lang}"].splitlines()[0] in text and values[f"message_{other}"].splitlines()[0] not in text
    assert f"{PARTS[SDPA]}  1/5" in text and "✗ [0/3]" in text
    assert ("诊断出的错误" if lang == "zh" else "Mistakes found") in text
    assert "syntax-error, mask-diagonal, python-loop" in text
    assert ("建议（不扣分）：mask-value-overflow" if lang == "zh" else "Advice (no points lost): mask-value-overflow") in text
    assert explain("mask-value-overflow", lang) in text  # a passed check with advice shows why


def test_every_catalog_id_has_a_fix_first_group():
    assert {mistake: entry.get("fix_first") for mistake, entry in catalog().items()
            if entry.get("fix_first") not in FIX_FIRST} == {}


def test_fix_first_keeps_the_groups_order_and_puts_unknown_ids_last():
    assert fix_first(["python-loop", "not-a-catalog-id", "submission-link", "wrong-return", "python-loop"]) == \
        ["submission-link", "wrong-return", "python-loop", "not-a-catalog-id"]
    groups = [FIX_FIRST.index(catalog()[m]["fix_first"]) for m in fix_first(catalog())]
    assert groups == sorted(groups)


def test_the_class_summary_counts_advice_apart_from_mistakes():
    reports = [{"student": s, "score": 1.0, "max_score": 7.0, "checks": [], "mistakes": mistakes, "advice": advice}
               for s, mistakes, advice in (("a", ["mask-diagonal"], ["mask-value-overflow"]),
                                           ("b", [], ["mask-value-overflow"]), ("c", ["mask-diagonal"], []))]
    text = class_summary(reports, "en")
    mistakes, advice = text.split("Most frequent advice (no points lost):")
    assert "Most frequent mistakes" in mistakes and "mask-diagonal" in mistakes and "mask-value-overflow" not in mistakes
    assert advice.splitlines()[1].split()[:3] == ["2", "67%", "mask-value-overflow"]
    assert "最常见的建议（不扣分）" in class_summary(reports, "zh")


def test_the_class_summary_lists_what_the_graph_could_not_judge_for_review():
    reports = [{"student": s, "score": 10.0, "max_score": 20.0, "checks": [], "mistakes": mistakes, "advice": []}
               for s, mistakes in (("ana", ["unsupported-op"]), ("bo", ["mask-diagonal"]))]
    listed = class_summary(reports, "en").split("Parts the grader could not judge (review by hand) (1):\n")[1]
    assert listed.splitlines()[0].strip() == "ana: unsupported-op"
    assert "请老师人工复核" in class_summary(reports, "zh")


def test_a_device_check_no_stand_in_could_judge_is_listed_for_review_in_the_summary_and_the_report():
    """A device check that could not conclude awards nothing; the class summary (text) and each report (JSON, as
    grade-all writes it) name it for a person, beside the hand-ins the graph could not grade."""
    device = Check("sdpa.device", "sdpa", 0.5, "hidden", "设备", "device", lambda ctx: None)
    values = Check("sdpa.values", "sdpa", 3.0, "hidden", "数值", "values", lambda ctx: None)
    unjudged = build_report([(device, Outcome(False, "无法评判", "could not be judged on the GPU stand-ins: review by "
                                              "hand, or grade on a GPU", ["device-not-judged"])),
                             (values, Outcome(True))])
    judged = build_report([(device, Outcome(True)), (values, Outcome(True))])
    assert unjudged["review"] == ["sdpa.device"] and unjudged["score"] == 3.0 and "review" not in judged
    assert in_language(unjudged, "en")["review"] == ["sdpa.device"]
    reports = [{**unjudged, "student": "ana"}, {**judged, "student": "bo"}]
    listed = class_summary(reports, "en").split("Parts the grader could not judge (review by hand) (1):\n")[1]
    assert listed.splitlines()[0].strip() == "ana: device-not-judged"


def test_the_class_summary_counts_verified_fixes_by_mistake_and_their_points():
    fix = {"mistake": "mask-diagonal", "points": 3.0}
    reports = [{"student": s, "score": 1.0, "max_score": 20.0, "checks": [], "mistakes": ["mask-diagonal"], "fixes": f}
               for s, f in (("a", [fix]), ("b", [fix, {**fix, "points": 1.0}]), ("c", []))]
    text = class_summary(reports, "en")
    assert text.split("Verified one-line fixes shown")[1].splitlines()[1].split()[:4] == ["2", "67%", "mask-diagonal", "+7"]
    assert "已验证的一行修正" in class_summary(reports, "zh")
    assert "Verified one-line fixes" not in class_summary([{**r, "fixes": []} for r in reports], "en")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_rendered_text_explains_each_mistake_once(lang):
    """Three checks naming one mistake, each with its own finding: its catalog paragraph is printed at the first,
    then only its title."""
    report = build_report([(spec(f"{SDPA}.{name}", SDPA, 1.0), Outcome(False, f"{name} 错。", f"{name} wrong.",
                                                                       ["mask-diagonal"]))
                           for name in ("causal", "values", "leak")])
    text = render_text(report, lang)
    assert text.count(explain("mask-diagonal", lang)) == 1
    assert text.count(f"[mask-diagonal] {catalog()['mask-diagonal'][f'title_{lang}']}") == 3


def test_a_place_in_a_notebook_is_named_by_the_cell_that_defines_the_graded_name():
    """Colab numbers no cells: "the cell that defines `MultiHeadAttention`, line 12" is where a student can look."""
    where = {"line": 12, "text": "att = q @ k.transpose(2, 3)", "cell": 9, "defines": "MultiHeadAttention"}
    report = build_report([(spec(f"{MHA}.values", MHA, 2.0), Outcome(False, "错。", "Wrong.", ["head-split"], where))])
    assert "定义 `MultiHeadAttention` 的单元格第 12 行" in report["checks"][0]["message_zh"]
    assert "the cell that defines `MultiHeadAttention`, line 12" in report["checks"][0]["message_en"]
    assert "cell 9" not in report["checks"][0]["message_en"]


def test_a_check_that_held_in_a_part_a_gate_zeroed_shows_no_tick():
    """`grade`'s text: the gate failed, so the check that held scores 0: ○ and the gate named, never ✓ [0/1]."""
    report = build_report([(spec(f"{SDPA}.rules", SDPA, 0.0, gate=True), Outcome(False, "违规。", "Rule broken.")),
                           (spec(f"{SDPA}.shapes", SDPA, 1.0), Outcome(True, "对。", "Right."))])
    text = render_text(report, "en")
    assert f"○ [0/1] {SDPA}.shapes" in text and f"(not counted: {SDPA}.rules failed)" in text and "✓" not in text


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_one_error_met_by_several_checks_is_said_once_with_the_checks_it_failed(lang):
    """`grade`'s text: a crash every probe met (the same exception on the same line) is quoted under the first
    check, which lists the others; each other check is one line pointing to it."""
    where = {"line": 66, "text": "y = y.transpose(1, 2).view(B, T, C)"}
    crash = "RuntimeError: view size is not compatible with input tensor's size and stride"
    results = []
    for name, doing in (("shapes", "运行 forward"), ("values", "运行因果 forward"), ("dropout", "以 dropout=0.5 运行 forward")):
        outcome = Outcome(False, f"{doing} 时出错：{crash}", f"Error while {doing}: {crash}", ["missing-contiguous"], where)
        outcome.error = crash
        results.append((spec(f"{MHA}.{name}", MHA, 1.0), outcome))
    text = render_text(build_report(results), lang)
    assert text.count("view size is not compatible") == 1, text
    assert text.count(explain("missing-contiguous", lang)) == 1
    listed = f"{MHA}.values, {MHA}.dropout"
    assert (f"同样的问题还让这 2 项检查未通过：{listed}" if lang == "zh" else f"The same problem failed 2 more checks: {listed}") in text
    assert text.count(f"同上，见 {MHA}.shapes" if lang == "zh" else f"same as {MHA}.shapes") == 2


def test_a_verified_fix_comes_first_with_its_gain():
    """`grade`'s text: the one-line fix that gains points opens the report, above every part."""
    report = build_report([(spec(f"{MHA}.values", MHA, 2.0), Outcome(False, "错。", "Wrong.", ["missing-contiguous"]))])
    fix = {"line": 57, "edits": [{"line": 57, "defines": "MultiHeadAttention", "after": "y = y.reshape(B, T, C)"}],
           "checks": [f"{MHA}.values"], "points": 10.0}
    from grader.fixes import message
    report["fixes"] = [{**fix, "message_zh": message(fix["edits"], fix["checks"], 10.0, "zh"),
                        "message_en": message(fix["edits"], fix["checks"], 10.0, "en")}]
    for lang, said in (("zh", "只需改一行即可多得 10 分：定义 `MultiHeadAttention` 的单元格第 57 行 → `y = y.reshape(B, T, C)`"),
                       ("en", "Change one line to gain 10 points: the cell that defines `MultiHeadAttention`, line 57 → "
                              "`y = y.reshape(B, T, C)`")):
        text = render_text(report, lang)
        assert said in text and text.index(said) < text.index(PARTS[MHA]), text
        assert text.count("Ctrl+M L") == 1


def test_a_check_a_failed_gate_zeroes_says_it_is_not_counted_and_why():
    """A crash in forward fails the part's gate; the layout check still held, scores 0, and its message must not
    read as a pass alone: it opens with "not counted", naming the gate, in both languages."""
    report = build_report([
        (spec(f"{MHA}.computes_attention", MHA, 0.0, gate=True),
         Outcome(False, "运行 forward 时出错：NameError。", "Error while running forward: NameError.")),
        (spec(f"{MHA}.interface", MHA, 1.0), Outcome(True, "四个投影与两个 dropout 都符合接口。",
                                                     "The four projections and both dropouts match the interface.")),
        (spec(f"{SDPA}.values", SDPA, 3.0), Outcome(True, "数值一致。", "Values match.")),
    ])
    interface = next(c for c in report["checks"] if c["id"] == f"{MHA}.interface")
    assert interface["points"] == 0.0 and interface["max_points"] == 1.0
    assert interface["message_zh"].startswith(f"不计分：{MHA}.computes_attention 未通过")
    assert interface["message_en"].startswith(f"Not counted: {MHA}.computes_attention failed")
    assert "match the interface" in interface["message_en"]  # what held is still said, after
    other_part = next(c for c in report["checks"] if c["id"] == f"{SDPA}.values")
    assert other_part["points"] == 3.0 and other_part["message_en"] == "Values match."
