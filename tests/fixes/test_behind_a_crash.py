"""When every call of a part raises, does the grader mend the crash on a copy (the catalogued fix, else the smallest
edit that lets the call run), regrade it, and name what the copy still gets wrong "behind this error"?

The reconstructions are in tests/submissions/behind_crash/ (each names the pattern's public origin on its first
line). The crash's own checks still fail as before: the score is what the crash leaves, and the ids found behind it
are added to the report's `mistakes`, to `found_behind` and to the crashed gate's `behind_error`.
"""
import pytest

from support.paths import SUBMISSIONS
from grader.fixes.crash_repairs import repair

pytestmark = pytest.mark.sandbox

CASES = SUBMISSIONS / "behind_crash"
EXPECTED = {
    # name: (score, the report's mistakes in order, the crashed gate, how the copy was mended, ids behind it)
    "float_head_dim_returns_tuple": (10.0, ["float-head-dim", "wrong-return"], "mha.computes_attention", "fix",
                                     ["wrong-return"]),
    "float_head_dim_no_dropout": (10.0, ["float-head-dim", "dropout-not-applied"], "mha.computes_attention", "fix",
                                  ["dropout-not-applied"]),
    "undefined_name_wrong_scale": (10.0, ["wrong-scale"], "mha.computes_attention", "edit", ["wrong-scale"]),
    "torch_dropout_without_train": (10.0, ["missing-scale"], "sdpa.computes_attention", "edit", ["missing-scale"]),
    "undefined_name_no_edit": (10.0, [], "mha.computes_attention", None, []),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_what_a_crash_hides_is_named_behind_it_and_the_score_stays(graded, name):
    score, mistakes, gate_id, by, behind = EXPECTED[name]
    report = graded(CASES / f"{name}.py")
    assert report["score"] == score
    assert report["mistakes"] == mistakes
    gate = next(c for c in report["checks"] if c["id"] == gate_id)
    assert not gate["passed"] and gate["error"]  # the crash's own check fails as before
    assert gate["behind_error"]["by"] == by and gate["behind_error"]["mistakes"] == behind
    assert bool(gate["behind_error"]["lines"]) == (by is not None)  # the lines the mended copy changed
    assert {entry["mistake"] for entry in report["found_behind"]} == set(behind)
    last_line = gate["message"].split("\n")[-1]
    if behind:
        assert last_line.startswith("Behind this error: regraded with") and all(f"[{m}]" in last_line for m in behind)
        assert all(f"[{m}]" in graded(CASES / f"{name}.py", "zh")[
            "checks"][[c["id"] for c in report["checks"]].index(gate_id)]["message"] for m in behind)
    else:  # said honestly: nothing behind the crash could be checked
        assert last_line == ("Behind this error: no small edit let the call run, so what the code does after it "
                             "could not be checked.")


@pytest.mark.unit
def test_a_name_read_bare_is_repaired_as_the_attribute_the_class_stores():
    source = (CASES / "undefined_name_wrong_scale.py").read_text(encoding="utf-8")
    candidate = repair(source, "NameError: name 'scale' is not defined", "MultiHeadAttention")
    (edit,) = candidate.edits
    assert edit.after.strip().startswith("att = (q @ k.transpose(-2, -1)) * self.scale")


@pytest.mark.unit
def test_a_misspelled_local_is_repaired_as_the_one_near_name_the_function_binds():
    source = "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    scores = Q @ K.mT\n    return scoers, K\n"
    (edit,) = repair(source, "NameError: name 'scoers' is not defined", "scaled_dot_product_attention").edits
    assert edit.after == "    return scores, K"


@pytest.mark.unit
def test_a_name_with_no_plain_meaning_gets_no_repair():
    source = (CASES / "undefined_name_no_edit.py").read_text(encoding="utf-8")
    assert repair(source, "NameError: name 'temperature' is not defined", "MultiHeadAttention") is None


@pytest.mark.unit
def test_torch_dropout_gets_the_train_flag_of_its_place():
    source = (CASES / "torch_dropout_without_train.py").read_text(encoding="utf-8")
    error = 'TypeError: dropout() missing 1 required positional arguments: "train"'
    (edit,) = repair(source, error, "scaled_dot_product_attention").edits
    assert "torch.dropout(F.softmax(scores, dim=-1), dropout_p, True)" in edit.after
    method = "class M:\n    def forward(self, att):\n        return torch.dropout(att, 0.1)\n"
    (edit,) = repair(method, error, "M").edits
    assert edit.after == "        return torch.dropout(att, 0.1, self.training)"


@pytest.mark.unit
def test_a_part_that_ran_out_of_time_or_left_its_todo_is_not_looked_behind():
    from grader.fixes.behind import crashes

    def gate(mistakes):
        return {"checks": [{"id": "mha.computes_attention", "part": "mha", "passed": False, "error": "Error: x",
                            "mistakes": mistakes}]}

    assert set(crashes(gate([]), {"mha.computes_attention"})) == {"mha"}
    for mistake in ("timeout", "memory-limit", "tampering", "not-implemented"):
        assert crashes(gate([mistake]), {"mha.computes_attention"}) == {}, mistake
