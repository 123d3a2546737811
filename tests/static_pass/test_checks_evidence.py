"""Each mistake on its own evidence, every promised shape, and no cascade of one diagnosis.

The fixtures are real-code-style files in tests/submissions/: some combine two bugs, so that a
finding that leaned on another check passing (devices, loops) would go missing.
"""
import ast

import pytest

from support.paths import REFERENCE, ROOT, SUBMISSIONS
from grader.exercises.attention import PART, PART_IDS
from grader.checks import checks_for
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.sandbox

MUTANTS = SUBMISSIONS / "mutants"
CHECKS_PACKAGE = ROOT / "grader" / "checks"
NEEDS_VALUES = "Not checked: needs correct values (see {part}.values)."


def by_id(report: dict) -> dict:
    return {c["id"]: c for c in report["checks"]}


def lost(report: dict) -> list[str]:
    return [c["id"] for c in report["checks"] if c["points"] < c["max_points"]]


@pytest.mark.parametrize("name", ["hardcoded-dims.py", "hardcoded-dims__2.py"])
def test_a_leading_dims_bug_costs_the_shapes_check_alone_and_is_named(graded, name):
    # an einsum "b..." that crashes on (T, d); a (1, T, T) mask that adds a batch dim to (T, d)
    report = graded(MUTANTS / name)
    assert lost(report) == ["sdpa.shapes"], lost(report)
    shapes = by_id(report)["sdpa.shapes"]
    assert shapes["mistakes"] == ["hardcoded-dims"]
    assert "wrong with 0" in shapes["message"] and "(6, 8)" in shapes["message"]
    assert report["score"] == PART["sdpa"].points + PART["mha"].points - shapes["max_points"]


def test_code_written_for_two_dim_input_still_shows_it_computes_attention(graded):
    # transpose(0, 1), softmax(dim=1), Q.size(1): right for (T, d) only
    report = graded(MUTANTS / "hardcoded-dims__3.py")
    checks = by_id(report)
    assert checks["sdpa.computes_attention"]["passed"], checks["sdpa.computes_attention"]["message"]
    assert "Right with 0 leading dims, wrong with 1, 2, 3" in checks["sdpa.shapes"]["message"]
    # the other checks run on (T, d), where the code is right: the rank bug costs the shapes points alone
    assert lost(report) == ["sdpa.shapes"], lost(report)
    assert report["mistakes"] == ["hardcoded-dims"]


@pytest.mark.parametrize("name, mistake", [("softmax-dim__3.py", "softmax-dim"), ("mask-missing__3.py", "mask-missing")])
def test_a_bug_at_the_rank_the_code_accepts_is_named_there_not_hidden_by_the_rank_bug(graded, name, mistake):
    """Code written for (T, d) with a softmax over the queries; for (B, T, d) with a discarded masked_fill."""
    checks = by_id(graded(MUTANTS / name))
    assert checks["sdpa.shapes"]["mistakes"] == ["hardcoded-dims"]
    for check in ("sdpa.causal_zeros", "sdpa.values", "sdpa.no_future_leak"):
        assert checks[check]["mistakes"] == [mistake], (check, checks[check]["message"])


def test_a_mask_without_device_is_found_although_the_first_shape_crashes(graded):
    report = graded(MUTANTS / "mask-device__3.py")
    checks = by_id(report)
    assert checks["sdpa.shapes"]["mistakes"] == ["hardcoded-dims"]
    assert checks["sdpa.device"]["mistakes"] == ["mask-device"], checks["sdpa.device"]["message"]
    assert {"hardcoded-dims", "mask-device"} <= set(report["mistakes"])


@pytest.mark.parametrize("name, part, values_mistake", [("python-loop__3.py", "sdpa", "mask-diagonal"),
                                                        ("python-loop__4.py", "mha", "missing-scale")])
def test_a_python_loop_is_found_although_the_values_are_wrong(graded, name, part, values_mistake):
    report = graded(MUTANTS / name)
    checks = by_id(report)
    assert checks[f"{part}.vectorized"]["mistakes"] == ["python-loop"], checks[f"{part}.vectorized"]["message"]
    assert checks[f"{part}.device"]["passed"], checks[f"{part}.device"]["message"]
    assert values_mistake in checks[f"{part}.values"]["mistakes"]


@pytest.mark.parametrize("name, part, unrelated", [("mask-diagonal.py", "sdpa", ("sdpa.device", "sdpa.vectorized")),
                                                   ("python-loop__4.py", "mha", ("mha.device",))])
def test_a_check_that_needs_correct_values_says_so_without_repeating_the_diagnosis(graded, name, part, unrelated):
    report = graded(MUTANTS / name)
    checks = by_id(report)
    assert not checks[f"{part}.values"]["passed"] and checks[f"{part}.values"]["mistakes"]
    cascaded = [checks[f"{part}.low_precision"], checks[f"{part}.gradients"]]
    for check in cascaded:
        assert check["message"] == NEEDS_VALUES.format(part=part), check
        assert check["mistakes"] == [] and not check["passed"]
        assert check["message_zh"].startswith("未检查")
    for independent in unrelated:  # titles that have nothing to do with the values bug
        assert checks[independent]["passed"], checks[independent]["message"]


@pytest.mark.unit
def test_check_order_follows_the_declared_parts():
    parts = [c.part for c in checks_for(exercise=EXERCISE)]
    assert parts == sorted(parts, key=PART_IDS.index)
    assert set(parts) == set(PART_IDS)


@pytest.mark.unit
def test_no_part_imports_another_and_no_checks_module_is_long():
    for module in CHECKS_PACKAGE.rglob("*.py"):
        assert len(module.read_text(encoding="utf-8").splitlines()) <= 350, module
        part = module.parent.name if module.parent != CHECKS_PACKAGE else None
        imported = {node.module for node in ast.walk(ast.parse(module.read_text(encoding="utf-8")))
                    if isinstance(node, ast.ImportFrom) and node.module}
        others = {f"grader.checks.{other}" for other in PART_IDS if other != part}
        assert not {name for name in imported if name.split(".")[:3] and ".".join(name.split(".")[:3]) in others}, \
            (module, imported)


def test_causal_weights_with_a_leaky_product_with_v_are_not_called_a_missing_mask(graded, tmp_path):
    """The weights it returns are causal, yet the output reads future rows of V (as an einsum that names V's
    sequence axis differently from the weights' key axis does): the leak is found, the mask is not blamed."""
    leaky = tmp_path / "leaky_product.py"
    leaky.write_text(REFERENCE.read_text(encoding="utf-8").replace(
        "out = torch.matmul(weights, V)  # (..., T, d_v)", "out = torch.matmul(weights, V.flip(-2))  # (..., T, d_v)"))
    assert leaky.read_text(encoding="utf-8") != REFERENCE.read_text(encoding="utf-8")
    leak = by_id(graded(leaky))["sdpa.no_future_leak"]
    assert not leak["passed"] and "mask-missing" not in leak["mistakes"], leak
    assert "the mask is fine" in leak["message"] and "weights @ V" in leak["message"]
    # and the check still names a mask that is missing, where the weights show it
    assert "mask-missing" in by_id(graded(MUTANTS / "mask-missing.py"))["sdpa.no_future_leak"]["mistakes"]


@pytest.mark.parametrize("name, bugs", [("head-split__5.py", {"head-split", "missing-out-proj"}),
                                        ("missing-out-proj__2.py", {"wrong-scale", "mask-missing", "missing-out-proj"})])
def test_each_of_several_bugs_in_one_module_is_named(graded, name, bugs):
    """No single wrong variant reproduces the numbers; the pair or triple of them does, and names each."""
    values = by_id(graded(MUTANTS / name))["mha.values"]
    assert set(values["mistakes"]) == bugs, values["message"]


def test_numbers_no_combination_explains_say_so_and_name_nothing(graded):
    """A fresh nn.Linear built in forward: no variant reproduces it, and no guess is made."""
    report = graded(MUTANTS / "layers-in-forward.py")
    checks = by_id(report)
    assert checks["mha.values"]["mistakes"] == [] and "cannot name" in checks["mha.values"]["message"]
    # random outputs without any dropout: not blamed on dropout
    assert checks["mha.dropout"]["mistakes"] == ["layers-in-forward"], checks["mha.dropout"]["message"]
    assert "dropout-in-eval" not in report["mistakes"]


def test_arguments_read_in_another_order_are_attention_with_a_wrong_input(graded):
    """forward(v, k, q): the gate sees attention (the queries it reads as values mix positions), so the part keeps
    its other points and the values check names the wrong input."""
    report = graded(MUTANTS / "wrong-input__4.py")
    checks = by_id(report)
    assert checks["mha.computes_attention"]["passed"], checks["mha.computes_attention"]["message"]
    assert checks["mha.values"]["mistakes"] == ["wrong-input"]
    assert checks["mha.interface"]["passed"] and checks["mha.shapes"]["passed"] and checks["mha.dropout"]["passed"]


def test_a_constant_scale_is_named_as_a_constant(graded):
    values = by_id(graded(MUTANTS / "wrong-scale__5.py"))["sdpa.values"]
    assert values["mistakes"] == ["wrong-scale"] and "the constant 8" in values["message"], values["message"]


def test_a_constant_scale_in_the_module_is_named_as_a_constant(graded, tmp_path):
    """`/ 8.0` equals head_dim at the first probe's sizes; the module probed at other sizes shows it is a constant."""
    constant = tmp_path / "module_scale_constant.py"
    constant.write_text((MUTANTS / "wrong-scale__2.py").read_text().replace("/ math.sqrt(D)", "/ 8.0"), encoding="utf-8")
    values = by_id(graded(constant))["mha.values"]
    assert values["mistakes"] == ["wrong-scale"] and "the constant 8" in values["message"], values["message"]


@pytest.mark.parametrize("name, check, points", [("wrong-backward.py", "sdpa.gradients", 19.0),
                                                 ("mask-fill-finite.py", "sdpa.causal_zeros", 18.0)])
def test_a_wrong_backward_and_a_tiny_causal_leak_each_cost_their_check(graded, name, check, points):
    """The numeric gradient comparison and the exact zeros above the diagonal are what catch these: relaxing either
    gives the mutant full marks."""
    report = graded(MUTANTS / name)
    assert lost(report) == [check] and report["score"] == points, (lost(report), report["score"])


def test_a_hard_coded_dropout_rate_is_found_at_another_rate(graded):
    for name in ("dropout-hardcoded.py", "dropout-hardcoded__2.py"):
        assert by_id(graded(MUTANTS / name))["mha.dropout"]["mistakes"] == ["dropout-hardcoded"], name


def test_a_bug_behind_a_fixed_crash_is_named_and_marked_as_found_behind_it(graded):
    report = graded(SUBMISSIONS / "fixes" / "hardcoded-device-hides-mask-diagonal.py")
    assert [f["mistake"] for f in report["fixes"]] == ["hardcoded-device"]
    assert {"mistake": "mask-diagonal", "behind": ["hardcoded-device"]} in report["found_behind"], report["found_behind"]
    assert report["mistakes"][0] == "hardcoded-device" and "mask-diagonal" in report["mistakes"]
