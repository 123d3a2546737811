"""Does the grader recover the factor a student divided the scores by, and name it right?"""
import math

import pytest
import torch

from grader.checks import reference, scale_factor
from grader.exercises.attention import PROJECTIONS

pytestmark = pytest.mark.unit


def qkv(batch=(2, 3), T=6, d_k=8, d_v=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, T, d_k, generator=g), torch.randn(*batch, T, d_k, generator=g),
            torch.randn(*batch, T, d_v, generator=g))


def student_weights(Q, K, V, is_causal, factor):
    """What a student who divides by `factor` returns, in float32 as the probe sees it."""
    return reference.attention(Q, K, V, is_causal, scale=1 / factor)[1].float()


@pytest.mark.parametrize("batch", [(), (3,), (2, 3), (1, 2, 2)])
@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("factor", [1.0, math.sqrt(6), 8.0, 4.0, 1 / math.sqrt(8), 3.7])
def test_factor_is_recovered_from_weights_for_any_leading_dims(batch, is_causal, factor):
    Q, K, V = qkv(batch)
    recovered = scale_factor.factor_from_weights(Q, K, student_weights(Q, K, V, is_causal, factor), is_causal)
    assert recovered == pytest.approx(factor, rel=1e-4)


@pytest.mark.parametrize("variant", ["mask-diagonal", "mask-direction", "softmax-dim", "mask-after-softmax"])
def test_weights_wrong_in_another_way_name_no_factor(variant):
    """Only a scale and nothing else is a scale finding: a wrong mask keeps its own diagnosis."""
    Q, K, V = qkv()
    _, weights = reference.attention(Q, K, V, True, variant)
    assert scale_factor.factor_from_weights(Q, K, weights.float(), True) is None


def test_right_or_unusable_weights_are_no_finding():
    Q, K, V = qkv()
    right = student_weights(Q, K, V, True, math.sqrt(8))
    assert scale_factor.finding(scale_factor.factor_from_weights(Q, K, right, True),
                                scale_factor.sizes_of_attention(Q, V)) is None
    assert scale_factor.factor_from_weights(Q, K, None, True) is None
    assert scale_factor.factor_from_weights(Q, K, right[..., :-1], True) is None  # wrong shape
    one = qkv(T=1)
    assert scale_factor.factor_from_weights(one[0], one[1], torch.ones(2, 3, 1, 1), True) is None  # T = 1: no evidence


@pytest.mark.parametrize("factor, mistake, named", [
    (math.sqrt(6), "wrong-scale", "divided by √T = 2.45"),
    (8.0, "wrong-scale", "divided by d_k = 8"),
    (4.0, "wrong-scale", "divided by d_k / 2 = 4"),  # scores / (d_k ** 1/2)
    (16.0, "wrong-scale", "divided by 2·d_k = 16"),  # scores / d_k ** 1/2
    (math.sqrt(5), "wrong-scale", "divided by √d_v = 2.24"),
    (1 / math.sqrt(8), "wrong-scale", "multiplied by √d_k = 2.83"),
    (3.7, "wrong-scale", "divided by 3.7;"),
    (1.0, "missing-scale", "not scaled"),
])
def test_finding_names_the_factor_and_the_right_one(factor, mistake, named):
    Q, K, V = qkv(T=6, d_k=8, d_v=5)
    found = scale_factor.finding(factor, scale_factor.sizes_of_attention(Q, V))
    assert found.mistake == mistake
    assert named in found.en and "divide by √d_k = 2.83" in found.en
    assert "√d_k = 2.83" in found.zh


def test_equal_sizes_are_all_named():
    found = scale_factor.finding(8.0, {"d_k": 8, "T": 6, "d_v": 8})
    assert "d_k = d_v = 8" in found.en


def module_case(dim=32, n_heads=4, B=2, T=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    weights = {name: torch.randn(dim, dim, generator=g) / math.sqrt(dim) for name in PROJECTIONS}
    call = {x: torch.randn(B, T, dim, generator=g) for x in "qkv"}
    return weights, call


@pytest.mark.parametrize("factor, named", [(math.sqrt(32), "divided by √dim = 5.66"), (1.0, "not scaled"),
                                           (8.0, "divided by head_dim = 8")])
def test_module_factor_is_recovered_per_head_from_the_output(factor, named):
    weights, call = module_case()
    out = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, 4, True, scale=1 / factor).float()
    recovered = scale_factor.factor_of_module(out, call, weights, 4, True)
    assert recovered == pytest.approx(factor, rel=1e-3)
    found = scale_factor.finding(recovered, scale_factor.sizes_of_module(5, 32, 4))
    assert named in found.en and "divide by √head_dim = 2.83" in found.en


def test_module_with_another_mistake_names_no_factor():
    weights, call = module_case()
    out = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, 4, True, "head-split").float()
    assert scale_factor.factor_of_module(out, call, weights, 4, True) is None
    right = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, 4, True).float()
    assert scale_factor.finding(scale_factor.factor_of_module(right, call, weights, 4, True),
                                scale_factor.sizes_of_module(5, 32, 4)) is None


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("is_causal", [True, False])
def test_weights_that_ignore_the_scores_name_no_divisor(seed, is_causal):
    """Uniform weights (no Q or K in them) fit any huge divisor within rounding: no scale is found, whatever the
    inputs (a fit of 1/slope on rounding noise once named `wrong-scale`, 'divided by 1.96e+33', on some inputs)."""
    Q, K, V = qkv(seed=seed)
    _, uniform = reference.attention(Q, K, V, is_causal, scale=0.0)
    assert scale_factor.factor_from_weights(Q, K, uniform.float().double(), is_causal) is None
