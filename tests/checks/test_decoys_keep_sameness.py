"""Does the worker meet one tensor handed as q, k and v (self-attention) as one tensor, and equal ones as equal?

The worker traces on decoys (grader/checks/decoys.py). Drawn one per tensor, they turned `mha.values`'s self-attention
calls (q is k is v) into three unrelated inputs, so a module whose self-attention path alone is wrong (behind `q is k`
or `torch.equal(q, k)`) was traced on its other path and kept every point (red team on issue 42). Decoys keep which
tensors of one call are one another or equal (`request_tensors.sameness`), the worker keeps one tensor one tensor
through its placement and regime, and the replay that checks a value read keeps them too. Every check whose
points need correct values (`mha.low_precision`, `mha.mask_buffer`, `mha.gradients`) hands self-attention too, so
such a path costs what the same mistake made everywhere costs.
"""
import pytest
import torch

from grader.checks import decoys, student_code
from grader.grade import grade_submission
from grader.sandbox.requests import Probe
from support.hand_ins import edited, reference_edited

PROJECTIONS = "".join(f"        {x} = self.w{x}({x}).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)"
                      "  # (B, H, T, d)\n" for x in "qkv")
ASKED = {"is": "q is k and k is v", "equal": "torch.equal(q, k) and torch.equal(k, v)"}


def projected_on_their_own_path(tmp_path, test: str, wrong: bool):
    """The reference with a self-attention path of its own for the projections: right, or projecting k and v with wq
    (a mistake only self-attention meets)."""
    own = "self.wq(q), self.wq(q), self.wq(q)" if wrong else "self.wq(q), self.wk(q), self.wv(q)"
    branch = (f"        if {ASKED[test]}:\n            q, k, v = {own}\n        else:\n"
              "            q, k, v = self.wq(q), self.wk(k), self.wv(v)\n"
              + "".join(f"        {x} = {x}.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)\n" for x in "qkv"))
    name = f"self_attention_{test}_{'wrong' if wrong else 'right'}"
    return reference_edited(tmp_path, name, PROJECTIONS, branch)


@pytest.mark.unit
def test_one_tensor_given_twice_to_one_call_is_one_decoy_and_equal_ones_are_equal():
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    sent = decoys.decoys({"calls": [{"q": x, "k": x, "v": x.clone()}, {"q": x, "k": x.clone(), "v": x + 1}]})
    (q, k, v), (q2, k2, v2) = ([call[name] for name in "qkv"] for call in sent["calls"])
    assert q is k and v is not q and torch.equal(v, q) and not torch.equal(q, x)
    assert q2 is not q and torch.equal(q2, k2) and not torch.equal(q2, v2)  # two calls never share a decoy
    keys = {student_code._message_key(Probe.SDPA, {"Q": x, "K": k_, "V": x}) for k_ in (x, x.clone(), x + 1)}
    assert len(keys) == 3  # the one tensor, an equal one and another are three messages


@pytest.mark.sandbox
@pytest.mark.parametrize("test", ASKED)
def test_a_self_attention_path_is_graded_where_self_attention_is_asked(tmp_path, test):
    right = grade_submission(projected_on_their_own_path(tmp_path, test, wrong=False))
    assert right["score"] == right["max_score"], [c["id"] for c in right["checks"] if not c["passed"]]
    wrong = grade_submission(projected_on_their_own_path(tmp_path, test, wrong=True))
    assert not next(c for c in wrong["checks"] if c["id"] == "mha.values")["passed"], wrong["score"]


@pytest.mark.sandbox
def test_a_wrong_self_attention_path_scores_no_more_than_the_same_mistake_everywhere(tmp_path):
    """The wrong path alone kept 18 against its twin's 15.5 while only `mha.values` handed self-attention."""
    wrong = grade_submission(projected_on_their_own_path(tmp_path, "is", wrong=True))
    everywhere = reference_edited(tmp_path, "projected_with_wq_always", PROJECTIONS, "".join(
        f"        {x} = self.wq({x}).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)\n"
        for x in "qkv"))
    twin = grade_submission(everywhere)
    assert wrong["score"] <= twin["score"] < twin["max_score"], (wrong["score"], twin["score"])


@pytest.mark.sandbox
def test_a_module_checked_in_float32_meets_its_self_attention_path_in_the_gradients_check(tmp_path):
    """A module that runs in float32 alone (a float32 constant in its arithmetic) takes the gradients check in float32:
    the self-attention call stays one tensor there, so a wrong path behind `q is k` meets it."""
    last_split = "        v = v.view(B, T, self.n_heads, self.head_dim).transpose(1, 2)\n"
    in_float32 = edited(projected_on_their_own_path(tmp_path, "is", wrong=True), tmp_path, "self_attention_is_float32",
                        last_split, last_split + "        q = q @ torch.eye(self.head_dim)\n")
    checks = {c["id"]: c for c in grade_submission(in_float32)["checks"]}
    assert not checks["mha.gradients"]["passed"], checks["mha.gradients"]["message_en"]
