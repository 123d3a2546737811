"""Are the float64 references right, and do the tolerances let honest float32/float16 code pass and a small bug fail?

Checked against oracles that share no code with grader/checks/reference.py: torch's own attention
(F.scaled_dot_product_attention; with V = the identity it returns the weights) and nn.MultiheadAttention
loaded with the same weights. No sandbox: a wrong reference or tolerance fails here, in the fast tier.
"""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from grader.checks import reference, Context
from grader.checks.mha import probing as mha_probing
from grader.checks.sdpa import probing as sdpa_probing
from grader.checks.diagnosis import close
from grader.sandbox.requests import SdpaRequest

pytestmark = pytest.mark.unit

# The documented tolerances against the float64 reference, (atol, rtol) per input dtype, as literals: the checks
# must apply these (test_float32_errors_just_inside_pass_and_just_outside_fail), and they must suit honest code.
DOCUMENTED_TOLERANCE = {torch.float32: (1e-5, 1e-4), torch.float16: (1e-2, 1e-2), torch.bfloat16: (8e-2, 8e-2)}
# the module: four projections more, twice the low-precision headroom
DOCUMENTED_MODULE_TOLERANCE = {**DOCUMENTED_TOLERANCE, torch.float16: (2e-2, 2e-2), torch.bfloat16: (1.6e-1, 1.6e-1)}
SHAPES = [(6, 8, 5), (2, 6, 8, 5), (2, 3, 6, 8, 5), (1, 2, 1, 4, 3)]  # (..., T, d_k, d_v): d_k != d_v


def inputs(*lead: int, T: int, d_k: int, d_v: int, dtype=torch.float64, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    make = lambda d: torch.randn(*lead, T, d, generator=generator, dtype=torch.float64).to(dtype)  # noqa: E731
    return make(d_k), make(d_k), make(d_v)


def oracle_weights(Q, K, is_causal: bool) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d_k) + M) from torch's kernel: its output for V = I is the weight matrix."""
    T = Q.size(-2)
    identity = torch.eye(T, dtype=Q.dtype).expand(*Q.shape[:-2], T, T)
    return F.scaled_dot_product_attention(Q, K, identity, is_causal=is_causal)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("is_causal", [True, False])
def test_attention_is_torchs_attention(shape, is_causal):
    *lead, T, d_k, d_v = shape
    Q, K, V = inputs(*lead, T=T, d_k=d_k, d_v=d_v)
    out, weights = reference.attention(Q, K, V, is_causal)
    assert torch.allclose(out, F.scaled_dot_product_attention(Q, K, V, is_causal=is_causal), atol=1e-12, rtol=0)
    assert torch.allclose(weights, oracle_weights(Q, K, is_causal), atol=1e-12, rtol=0)
    if is_causal:  # exactly zero above the diagonal, not merely small
        assert torch.all(weights[..., torch.ones(T, T, dtype=torch.bool).triu(1)] == 0)


@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("n_heads", [1, 4])
def test_multi_head_attention_is_torchs_module(is_causal, n_heads):
    B, T, C = 2, 7, 12
    generator = torch.Generator().manual_seed(1)
    weights = {name: torch.randn(C, C, generator=generator, dtype=torch.float64) / math.sqrt(C)
               for name in ("wq", "wk", "wv", "wo")}
    q, k, v = (torch.randn(B, T, C, generator=generator, dtype=torch.float64) for _ in range(3))
    module = nn.MultiheadAttention(C, n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.cat([weights["wq"], weights["wk"], weights["wv"]]))
        module.out_proj.weight.copy_(weights["wo"])
    future = torch.ones(T, T, dtype=torch.bool).triu(1) if is_causal else None
    expected, _ = module(q, k, v, attn_mask=future, need_weights=False)
    actual = reference.multi_head_attention(q, k, v, weights, n_heads, is_causal)
    assert torch.allclose(actual, expected, atol=1e-12, rtol=0)


HONEST_FLOAT32 = {  # the same attention written as students do, in the input's precision
    "matmul": lambda Q, K, V: torch.softmax((Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))).masked_fill(
        torch.ones(Q.size(-2), Q.size(-2), dtype=torch.bool).triu(1), float("-inf")), dim=-1) @ V,
    "einsum-additive-finfo": lambda Q, K, V: torch.einsum("...ts,...sd->...td", torch.softmax(
        torch.einsum("...td,...sd->...ts", Q, K) * Q.size(-1) ** -0.5
        + torch.full((Q.size(-2), Q.size(-2)), torch.finfo(Q.dtype).min, dtype=Q.dtype).triu(1), dim=-1), V),
    "prescaled-query": lambda Q, K, V: torch.softmax((Q / math.sqrt(Q.size(-1))) @ K.mT + torch.zeros(
        Q.size(-2), Q.size(-2), dtype=Q.dtype).masked_fill(torch.ones(Q.size(-2), Q.size(-2), dtype=torch.bool).triu(1),
                                                          float("-inf")), dim=-1) @ V,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("style", HONEST_FLOAT32)
def test_honest_low_precision_code_is_within_the_tolerance(dtype, style):
    """The tolerance is wide enough: every honest spelling, run in the input's dtype, passes at every shape."""
    for seed, shape in enumerate(SHAPES + [(2, 4, 64, 16, 16)]):
        *lead, T, d_k, d_v = shape
        Q, K, V = inputs(*lead, T=T, d_k=d_k, d_v=d_v, dtype=dtype, seed=seed)
        expected, _ = reference.attention(Q, K, V, True)
        assert close(HONEST_FLOAT32[style](Q, K, V), expected, *DOCUMENTED_TOLERANCE[dtype]), (style, shape)


@pytest.mark.parametrize("dtype, relative_error", [(torch.float32, 1e-3), (torch.float16, 0.1),
                                                   (torch.bfloat16, 0.5)], ids=str)
def test_a_small_scale_error_is_outside_the_tolerance(dtype, relative_error):
    """The tolerance is narrow enough: scores scaled by (1 + e)/sqrt(d_k) fail, e a few roundoffs of the dtype above
    what honest code loses."""
    Q, K, V = inputs(2, T=16, d_k=16, d_v=16, dtype=dtype, seed=3)
    Q, K, V = Q * 2, K * 2, V  # larger logits: a scale error shows in the weights
    expected, _ = reference.attention(Q, K, V, True)
    wrong, _ = reference.attention(Q, K, V, True, scale=(1 + relative_error) / math.sqrt(16))
    assert not close(wrong.to(dtype), expected, *DOCUMENTED_TOLERANCE[dtype])
    assert not close(wrong.to(dtype), expected, *DOCUMENTED_MODULE_TOLERANCE[dtype])


class OffBy:
    """A stand-in student: the float64 reference, its float32 output scaled by (1 + relative_error)."""

    def __init__(self, relative_error: float) -> None:
        self.relative_error = relative_error

    def call(self, probe, request) -> dict:
        is_causal = True if request.is_causal is None else request.is_causal
        out, weights = reference.attention(request.Q, request.K, request.V, is_causal)
        out, weights = (out * (1 + self.relative_error)).float(), weights.float()
        return {"structure": {"kind": "tuple", "length": 2},
                "out": {"kind": "tensor", "shape": list(out.shape), "value": out},
                "weights": {"kind": "tensor", "shape": list(weights.shape), "value": weights}}


@pytest.mark.parametrize("relative_error, passes", [(0.8e-4, True), (1.25e-4, False)], ids=["inside", "outside"])
def test_float32_errors_just_inside_pass_and_just_outside_fail(relative_error, passes, monkeypatch):
    """Both parts' value comparisons, on float32 outputs off by relative_error: inside rtol 1e-4 for every value,
    or outside it wherever |expected| > 0.4 (atol 1e-5 / the 0.25e-4 excess), as most outputs of normal inputs are.
    Which mistake the numbers show is not the question here: naming it (seconds of variants) is left out."""
    for probing in (sdpa_probing, mha_probing):
        monkeypatch.setattr(probing, "diagnose_numbers", lambda *args: [])
    Q, K, V = inputs(2, T=8, d_k=8, d_v=8, dtype=torch.float32, seed=4)
    student = OffBy(relative_error)
    context = Context(student=student, static={}, cuda=False)
    answer = student.call(None, SdpaRequest(Q=Q, K=K, V=V, is_causal=True))
    sdpa_problem = sdpa_probing.compare(context, answer, Q, K, V, True, "值", "values")
    assert (sdpa_problem is None) is passes, sdpa_problem and sdpa_problem.en

    B, T, C, n_heads = 2, 8, 16, 4
    generator = torch.Generator().manual_seed(5)
    projections = {name: torch.randn(C, C, generator=generator, dtype=torch.float64) / math.sqrt(C)
                   for name in ("wq", "wk", "wv", "wo")}
    call = {name: torch.randn(B, T, C, generator=generator).float() for name in ("q", "k", "v")}
    expected = reference.multi_head_attention(call["q"], call["k"], call["v"], projections, n_heads, True)
    mha_problem = mha_probing.compare((expected * (1 + relative_error)).float(), call, projections, n_heads, True, {},
                                      ("值", "values"))
    assert (mha_problem is None) is passes, mha_problem and mha_problem.en


@pytest.mark.parametrize("is_causal", [True, False])
def test_reference_gradients_are_autograds_vector_jacobian_product_bit_for_bit(is_causal):
    """`reference.gradients` takes the gradient of sum(out * cotangent) instead of handing autograd the cotangent
    (whose check imports sympy): every gradient must be the same bits as `torch.autograd.grad(out, leaves,
    cotangent)`, for the function's and the module's references, a float32 cotangent included."""
    generator = torch.Generator().manual_seed(7)
    B, T, C, n_heads = 2, 5, 6, 2
    for float32_cotangent in (False, True):
        q, k, v = (torch.randn(B, T, C, generator=generator, dtype=torch.float64).requires_grad_(True) for _ in "qkv")
        params = {name: torch.randn(C, C, generator=generator, dtype=torch.float64).requires_grad_(True)
                  for name in ("wq", "wk", "wv", "wo")}
        cotangent = torch.randn(B, T, C, generator=generator, dtype=torch.float64)
        cotangent = cotangent.float() if float32_cotangent else cotangent
        for out, leaves in ((reference.attention(q, k, v, is_causal)[0], [q, k, v]),
                            (reference.multi_head_attention(q, k, v, params, n_heads, is_causal),
                             [q, k, v, *params.values()])):
            expected = torch.autograd.grad(out, leaves, cotangent.to(out.dtype), retain_graph=True)
            actual = reference.gradients(out, leaves, cotangent)
            assert all(torch.equal(a, e) for a, e in zip(actual, expected, strict=True))
