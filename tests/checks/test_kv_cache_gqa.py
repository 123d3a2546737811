"""Do the kv_cache lab's Part 3 graders of the whole prompt's pass (grader/checks/gqa/: shapes, values, gradients,
device, loops, the gates; 6 of the part's 10 points) give every honest `GroupedQueryAttention` its 6 points and name
each mistake of the Part 3 mutants the whole prompt shows, in Chinese and in English?

Graded through the real pipeline (`grade_submission`: the worker tracing `forward(x)` on decoys with the module's
parameters as graph inputs, the judge re-running each graph on the parent's own x and weights); each repository
hand-in graded whole once and read for these checks of Part 3 (tests/support/part_views.py). The decode chain's
mistake (`cache-mask-offset`) shows only after a cached prompt: these checks give its mutants full marks, and the
decode checks (grader/checks/gqa/decoding.py) name it.
"""
import functools
from pathlib import Path

import pytest
import torch

from grader.catalog import catalog, explain
from grader.checks import checks_for, secret
from grader.checks.gqa import variants
from grader.exercises.kv_cache import reference
from grader.grade import grade_submission
from grader.graph import gqa_answers
from grader.graph.answers import Findings
from grader.sandbox import gqa_probes
from grader.sandbox.requests import BadRequest, GqaRequest, gqa_weight_shapes
from support import part_views
from support.hand_ins import header
from support.paths import SUBMISSIONS
from support.session import SESSION_REPORTS

pytestmark = pytest.mark.sandbox

KV_CACHE = SUBMISSIONS / "kv_cache"
CORRECT = sorted((KV_CACHE / "correct").glob("*.py"))
PART_THREE = [path for path in sorted((KV_CACHE / "mutants").glob("*.py")) if header(path, "part") == "gqa"]
DECODE_ONLY = {"cache-mask-offset"}  # shows only after a cached prompt
MUTANTS = [path for path in PART_THREE if header(path, "expect") not in DECODE_ONLY]
AFTER_A_PROMPT = [path for path in PART_THREE if header(path, "expect") in DECODE_ONLY]
STUBS = KV_CACHE / "mutants" / "not-implemented.py"  # the notebook's three stubs, untouched
PLAIN = KV_CACHE / "correct" / "repeat_interleave_slice_plain.py"
PLAIN_RETURN = """        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.wo(y)"""


WHOLE_PROMPT = ("gqa.shapes", "gqa.values", "gqa.gradients", "gqa.device", "gqa.vectorized", "gqa.own_implementation",
                "gqa.rules")
"""Part 3's checks of the whole prompt's pass; gqa.decode and gqa.causal are tests/checks/test_kv_cache_decode.py's."""


def whole_prompt_checks() -> list:
    return [c for c in checks_for("gqa") if c.id in WHOLE_PROMPT]


@functools.cache
def graded(path: Path) -> dict:
    return part_views.report(path, "gqa", WHOLE_PROMPT)


def failures(report: dict) -> str:
    return "\n".join(f"{c['id']} {c['mistakes']}: {c['message_en'][:600]}" for c in report["checks"] if not c["passed"])


def failed_checks(report: dict) -> dict[str, list[str]]:
    return {c["id"]: c["mistakes"] for c in report["checks"] if not c["passed"]}


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_every_honest_module_scores_the_whole_prompts_six_points(path):
    report = graded(path)
    assert report["score"] == report["max_score"] == 6.0, failures(report)
    assert report["mistakes"] == []


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_a_part_three_mutant_loses_points_with_its_mistake_named_in_both_languages(path):
    expected = header(path, "expect")
    report = graded(path)
    assert report["score"] < 6.0, f"{path.name} got full marks"
    assert expected in report["mistakes"], f"{path.name}: expected {expected}\n{failures(report)}"
    naming = [c for c in report["checks"] if expected in c["mistakes"]]
    assert naming and all(not c["passed"] for c in naming)
    for check in naming:
        zh, en = check["message_zh"].splitlines(), check["message_en"].splitlines()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh[0]) and en[0] != zh[0], check["id"]
        assert explain(expected, "zh") in zh and explain(expected, "en") in en, check["id"]
    others = set(report["mistakes"]) - {expected}
    assert not others, f"{path.name} also named {others}\n{failures(report)}"


IN_THE_NUMBERS = [path for path in MUTANTS if catalog()[header(path, "expect")]["fix_first"] == "values"
                  and header(path, "expect") not in ("broken-grad", "inplace-autograd")]


@pytest.mark.parametrize("path", IN_THE_NUMBERS, ids=[p.stem for p in IN_THE_NUMBERS])
def test_a_mistake_in_the_numbers_is_named_by_the_values_check_and_the_gradients_wait_for_it(path):
    checks = {c["id"]: c for c in graded(path)["checks"]}
    assert header(path, "expect") in checks["gqa.values"]["mistakes"], failures(graded(path))
    assert checks["gqa.gradients"]["mistakes"] == [] and "see gqa.values" in checks["gqa.gradients"]["message_en"]


@pytest.mark.parametrize("path", AFTER_A_PROMPT, ids=[p.stem for p in AFTER_A_PROMPT])
def test_a_mask_not_offset_by_start_pos_keeps_the_whole_prompts_marks(path):
    """Without a cache start_pos is 0: the square mask is the right one there, and the decode checks judge the rest."""
    report = graded(path)
    assert report["score"] == 6.0, failures(report)


def test_the_untouched_stubs_score_zero_with_not_implemented():
    report = graded(STUBS)
    assert report["score"] == 0.0
    assert "not-implemented" in report["mistakes"]


def test_a_mask_dropped_past_the_fixed_configurations_lengths_fails_on_a_long_prompt(tmp_path):
    """No mask past 24 positions (red team on the second lab: 20 against its twin's 12.5): the long prompt drawn per
    grading meets it."""
    source = PLAIN.read_text(encoding="utf-8")
    masked = ('        future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(diagonal=start_pos + 1)  # (T, S)\n'
              '        scores = scores.masked_fill(future, float("-inf"))\n')
    assert source.count(masked) == 1
    path = tmp_path / "short_mask.py"
    path.write_text(source.replace(masked, masked.replace("        scores = ", "        if S <= 24:\n            scores = ")),
                    encoding="utf-8")
    report = graded(path)
    assert not next(c for c in report["checks"] if c["id"] == "gqa.values")["passed"], failures(report)


def test_wk_sized_for_n_heads_is_named_from_the_parameters_shape():
    report = graded(KV_CACHE / "mutants" / "kv-heads-ignored.py")
    shapes = next(c for c in report["checks"] if c["id"] == "gqa.shapes")
    assert "self.wk.weight should have shape (16, 32) (nn.Linear(32, 16, bias=False)), got (32, 32)" \
        in shapes["message_en"]
    assert "self.wk.weight 的形状应为 (16, 32)" in shapes["message_zh"]


def test_heads_split_by_n_heads_are_named_where_fewer_key_value_heads_fail_to_reshape():
    report = graded(KV_CACHE / "mutants" / "kv-heads-ignored__2.py")
    shapes = next(c for c in report["checks"] if c["id"] == "gqa.shapes")
    assert shapes["mistakes"] == ["kv-heads-ignored"]
    assert "It runs where n_kv_heads == n_heads and fails to reshape where there are fewer" in shapes["message_en"]


def test_key_value_heads_never_repeated_are_named_as_such_and_judged_on_devices_with_as_many():
    """repeat_kv left out runs where n_kv_heads is n_heads or 1 (one head broadcasts over the queries) and fails
    between: the text says the heads were never repeated, not split into n_heads (red team on the second lab), and the
    device and loop probes, which need a configuration the module runs on, take as many key/value heads as queries."""
    report = graded(KV_CACHE / "mutants" / "kv-heads-ignored__3.py")
    checks = {c["id"]: c for c in report["checks"]}
    assert "`repeat_kv` never brought them to n_heads" in checks["gqa.shapes"]["message_en"]
    assert "没有用 repeat_kv 把它们扩成 n_heads 个头" in checks["gqa.shapes"]["message_zh"]
    assert "split into n_heads heads" not in checks["gqa.shapes"]["message_en"]
    assert checks["gqa.device"]["passed"] and checks["gqa.vectorized"]["passed"], failures(report)


def test_the_same_reshape_crash_is_named_by_the_values_and_the_decode_checks_too():
    """The values check's pass and the decode chain meet the crash gqa.shapes explained: each names it, so no check
    of the part fails with an error alone."""
    report = grade_submission(KV_CACHE / "mutants" / "kv-heads-ignored__2.py", checks=checks_for("gqa"),
                              cache=SESSION_REPORTS)
    named = {c["id"]: c["mistakes"] for c in report["checks"] if not c["passed"] and c["mistakes"]}
    assert {"gqa.shapes", "gqa.values", "gqa.decode"} <= set(named), failures(report)
    assert all(mistakes == ["kv-heads-ignored"] for mistakes in named.values()), failures(report)


def test_keys_split_into_n_heads_of_a_smaller_width_are_named_where_the_scores_fail(tmp_path):
    """`view(B, T, n_heads, -1)` runs the split itself; the mismatch shows at the scores, with fewer key/value heads."""
    source = PLAIN.read_text(encoding="utf-8")
    split = "view(B, T, self.n_kv_heads, self.head_dim)"
    assert source.count(split) == 2
    path = tmp_path / "minus_one.py"
    path.write_text(source.replace(split, "view(B, T, self.n_heads, -1)"), encoding="utf-8")
    shapes = next(c for c in graded(path)["checks"] if c["id"] == "gqa.shapes")
    assert shapes["mistakes"] == ["kv-heads-ignored"], shapes["message_en"]


def with_forward_end(tmp_path: Path, name: str, end: str) -> Path:
    """The plain honest hand-in with the end of GroupedQueryAttention.forward replaced (its other parts unchanged)."""
    source = PLAIN.read_text(encoding="utf-8")
    assert source.count(PLAIN_RETURN) == 1
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(PLAIN_RETURN, end), encoding="utf-8")
    return path


def test_scores_divided_by_the_key_value_width_are_named_a_wrong_scale(tmp_path):
    """√(n_kv_heads · head_dim), the width of wk's output, in place of √head_dim: named `wrong-scale` (it was left
    unnamed, an independently written bug of the second lab)."""
    source = PLAIN.read_text(encoding="utf-8")
    path = tmp_path / "kv_width_scale.py"
    path.write_text(source.replace("/ math.sqrt(self.head_dim)", "/ math.sqrt(self.n_kv_heads * self.head_dim)"),
                    encoding="utf-8")
    assert failed_checks(graded(path)).get("gqa.values") == ["wrong-scale"], failures(graded(path))


def test_an_output_made_on_the_cpu_costs_the_device_point_alone(tmp_path):
    """A GPU copies the output into a CPU tensor without a word: only the stand-ins' report of its device shows it."""
    report = graded(with_forward_end(tmp_path, "cpu_output",
                                     "        out = torch.zeros(B, T, C)\n"
                                     "        out[:] = self.wo(y.transpose(1, 2).reshape(B, T, C))\n"
                                     "        return out"))
    assert failed_checks(report) == {"gqa.device": ["hardcoded-device"]}, failures(report)
    assert report["score"] == 5.0


def test_values_taken_out_to_python_earn_nothing(tmp_path):
    """y.tolist() answers from the decoys the worker traced on: the graph does not follow the parent's inputs."""
    report = graded(with_forward_end(tmp_path, "python_values",
                                     "        y = torch.tensor(y.transpose(1, 2).reshape(B, T, C).tolist())\n"
                                     "        return self.wo(y)"))
    assert "untraceable" in report["mistakes"], failures(report)
    assert report["score"] <= 1.5, failures(report)  # at most the device and loop points, which read no values


def test_an_import_in_forward_breaks_the_rules_and_zeroes_the_part(tmp_path):
    report = graded(with_forward_end(tmp_path, "import_os", "        import os\n" + PLAIN_RETURN))
    assert report["score"] == 0.0
    assert failed_checks(report)["gqa.rules"] == ["forbidden-import"]


def test_the_built_in_attention_seen_only_by_the_judge_zeroes_the_part(tmp_path, request):
    """With the static rule and the worker's refusal off, the judge still reads the built-in attention in the graph."""
    request.getfixturevalue("rules_bypassed")
    path = with_forward_end(tmp_path, "built_in", "        F.scaled_dot_product_attention(q, q, q)\n" + PLAIN_RETURN)
    report = grade_submission(path, checks=checks_for("gqa"))  # afresh: the cache's key holds no switch
    assert failed_checks(report)["gqa.own_implementation"] == ["forbidden-api"]
    assert report["score"] == 0.0


@pytest.mark.parametrize("name", ["correct/stack_groups_provided_sdpa_for_the_prompt", "mutants/kv-heads-ignored__2",
                                  "mutants/python-loop", "mutants/head-split"])
def test_the_verdict_is_the_same_under_two_grading_secrets(monkeypatch, name):
    """Sizes, regimes, weights and inputs are drawn per grading (grader/checks/secret.py): none may change a verdict."""
    verdicts = []
    for drawn in (11, 987654321):
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", drawn)
        report = grade_submission(KV_CACHE / f"{name}.py", checks=checks_for("gqa"))  # afresh: no cache holds a secret
        verdicts.append((report["score"], report["mistakes"]))
    assert verdicts[0] == verdicts[1]


@pytest.mark.unit
def test_the_whole_prompts_checks_hold_six_points_in_public_and_hidden_checks():
    whole_prompt = whole_prompt_checks()
    assert [c.id for c in whole_prompt] == list(WHOLE_PROMPT) and sum(c.points for c in whole_prompt) == 6.0
    assert sum(c.points for c in checks_for("gqa")) == 10.0
    assert {c.visibility for c in whole_prompt} == {"public", "hidden"}
    assert {c.id for c in whole_prompt if c.gate} == {"gqa.own_implementation", "gqa.rules"}


@pytest.mark.unit
def test_the_ids_part_three_names_are_in_the_catalog():
    assert {header(path, "expect") for path in MUTANTS} <= set(catalog())  # the decode checks name the others


@pytest.mark.unit
def test_each_variant_of_the_diagnosis_is_the_reference_with_that_mistake():
    """variants.forward without a mistake is gqa_forward; with the scale or the head order it is gqa_forward's flag."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 24, generator=g)
    weights = {name: torch.randn(shape, generator=g) / 5 for name, shape in
               gqa_weight_shapes(dict(dim=24, n_heads=6, n_kv_heads=3, max_seq_len=8, max_batch_size=2)).items()}
    assert torch.allclose(variants.forward(x, weights, 6, 3), reference.gqa_forward(x, weights, 6, 3).y, atol=1e-12)
    for variant, flag in (("wrong-scale-width", {"scale_by": "dim"}), ("missing-scale", {"scale_by": "one"}),
                          ("wrong-scale-kv-width", {"scale_by": "kv_dim"}), ("repeat-kv-order", {"tile": True})):
        assert torch.allclose(variants.forward(x, weights, 6, 3, variant),
                              reference.gqa_forward(x, weights, 6, 3, **flag).y, atol=1e-12), variant
    two_slips = variants.forward(x, weights, 6, 3, ("mask-direction", "head-split-kv"))
    assert variants.mistakes(two_slips, x, weights, 6, 3) == ["mask-direction", "head-split"]


@pytest.mark.unit
def test_a_request_holds_the_promised_weight_shapes():
    args = dict(dim=32, n_heads=4, n_kv_heads=2, max_seq_len=16, max_batch_size=2)
    assert gqa_weight_shapes(args) == {"wq": (32, 32), "wk": (16, 32), "wv": (16, 32), "wo": (32, 32)}
    x = torch.zeros(2, 5, 32)
    with pytest.raises(BadRequest, match="each weight"):
        GqaRequest(args=args, x=x, weights={"wk": torch.zeros(32, 32)})
    with pytest.raises(BadRequest, match="n_heads of n_kv_heads"):
        GqaRequest(args={**args, "n_kv_heads": 3}, x=x)
    with pytest.raises(BadRequest, match="max_batch_size"):
        GqaRequest(args=args, x=torch.zeros(3, 5, 32))


@pytest.mark.unit
def test_the_judge_runs_no_graph_with_weights_of_other_shapes_than_the_modules():
    """A module whose wk has n_heads heads was traced with that input: the judge says so and runs nothing, rather than
    handing the graph the promised (n_kv_heads * head_dim, dim) weight."""
    namespace: dict = {}
    exec(compile((KV_CACHE / "mutants" / "kv-heads-ignored.py").read_text(encoding="utf-8"), "hand-in", "exec"),
         namespace)
    args = dict(dim=32, n_heads=4, n_kv_heads=2, max_seq_len=16, max_batch_size=2)
    weights = {name: torch.randn(shape) for name, shape in gqa_weight_shapes(args).items()}
    fields = dict(args=args, x=torch.randn(2, 5, 32), weights=weights, seed=0, device="cpu", grad=False, cotangent=None,
                  count_ops=False, regime=None)
    traced = gqa_probes.gqa(namespace, [], **{k: v for k, v in fields.items() if k != "count_ops"})
    assert "graph" in traced  # the module runs with its own weights
    answer = gqa_answers.gqa(traced, fields, Findings())
    assert answer["parameters"]["wk"] == [32, 32] and "out" not in answer
    assert answer["error"]["type"] == "ParameterShape" and "wk.weight is [32, 32], expected [16, 32]" in \
        answer["error"]["message"]
