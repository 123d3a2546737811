"""Does an operator the grader cannot bound cost only the checks that met it, and does the report say that the
operator is fine and that the grader is the limit, in Chinese first, then in English?

The first hand-in's Part 1 is right; its hand-written softmax lists the masked positions in its backward with
`torch.nonzero` (a size set by the values, `unsupported-op`). The forward checks never run that backward and keep
their points; the two checks that take gradients meet the operator and lose theirs, and nothing else does. The second
lists the future's positions with `torch.nonzero` in the forward, so every check of Part 1 meets it: the checks held
behind the values and the shapes say the grader's limit, never that the code or its values are wrong.
"""
import pytest

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

BACKWARD_ONLY = SUBMISSIONS / "mutants" / "unsupported-op__2.py"
IN_THE_FORWARD = SUBMISSIONS / "mutants" / "unsupported-op.py"


def test_an_operator_only_the_backward_runs_costs_only_the_checks_that_take_gradients(graded):
    report = graded(BACKWARD_ONLY)
    lost = {c["id"]: c["max_points"] - c["points"] for c in report["checks"] if c["points"] < c["max_points"]}
    assert lost == {"sdpa.no_future_leak": 1.0, "sdpa.gradients": 1.0}, lost
    assert (report["score"], report["mistakes"]) == (18.0, ["unsupported-op"])
    for check in report["checks"]:
        assert check["mistakes"] == (["unsupported-op"] if check["id"] in lost else []), check["id"]
        assert check["passed"] is (check["id"] not in lost), check["id"]


def test_the_report_says_the_operator_is_fine_and_the_grader_is_the_limit(graded):
    zh = next(c for c in graded(BACKWARD_ONLY, "zh")["checks"] if c["id"] == "sdpa.gradients")
    en = next(c for c in graded(BACKWARD_ONLY)["checks"] if c["id"] == "sdpa.gradients")
    assert "aten.nonzero.default" in zh["message"] and "aten.nonzero.default" in en["message"]
    assert "算子本身没有问题" in zh["message"] and "限制在评分程序一方" in zh["message"]
    assert "the operator itself is fine" in en["message"] and "the limit is the grader's" in en["message"]
    assert zh["message"] == zh["message_zh"] and en["message"] == en["message_en"] != zh["message"]


def test_checks_held_behind_an_unsupported_operator_say_the_grader_is_the_limit(graded):
    for lang, says, never in (("zh", "算子本身没有问题", ("需要数值正确", "代码在所有输入形状上都出错")),
                              ("en", "the operator is fine", ("needs correct values", "the code fails"))):
        report = graded(IN_THE_FORWARD, lang)
        sdpa = [c for c in report["checks"] if c["part"] == "sdpa" and c["max_points"]]
        held = {c["id"] for c in sdpa if not c["mistakes"]}
        assert held == {"sdpa.low_precision", "sdpa.gradients", "sdpa.device", "sdpa.vectorized"}, held
        for check in sdpa:
            assert not check["passed"] and says in check["message"], (lang, check["id"])
            assert not any(text in check["message"] for text in never), (lang, check["id"], check["message"])
        assert all(c["passed"] for c in report["checks"] if c["part"] == "mha"), lang
