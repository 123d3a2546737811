"""Is the grader's float64 reference (grader/checks/reference.py) right? Checked against answers it does not compute:
PyTorch's own attention, and a multi-head attention written here head by head.

Every verdict of the values checks rests on the reference, so a wrong one (scaled by √d_v instead of √d_k, heads
merged in the wrong order) must fail here, in the fast tier, not only through the sandboxed gradings.
"""
import math

import pytest
import torch
import torch.nn.functional as F

from grader.checks import reference

pytestmark = pytest.mark.unit

PROJECTIONS = ("wq", "wk", "wv", "wo")


def tensors(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=g, dtype=torch.float64) for shape in shapes]


@pytest.mark.parametrize("is_causal", [True, False])
@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_attention_matches_pytorchs_own_with_d_k_not_d_v(batch, is_causal):
    """d_k = 12, d_v = 5: a reference scaled by √d_v (or by d_k) differs from PyTorch's."""
    Q, K, V = tensors((*batch, 7, 12), (*batch, 7, 12), (*batch, 7, 5))
    out, weights = reference.attention(Q, K, V, is_causal)
    assert torch.allclose(out, F.scaled_dot_product_attention(Q, K, V, is_causal=is_causal), atol=1e-12, rtol=1e-10)
    assert torch.allclose(weights.sum(-1), torch.ones(*batch, 7, dtype=torch.float64), atol=1e-12)
    if is_causal:
        assert (weights[..., reference.causal_future(7)] == 0).all()


def multi_head_by_hand(q, k, v, W, n_heads, is_causal):
    """Each head computed on its own slice of the projections, then concatenated and projected."""
    B, T, C = q.shape
    d = C // n_heads
    Q, K, V = q @ W["wq"].T, k @ W["wk"].T, v @ W["wv"].T
    heads = []
    for h in range(n_heads):
        part = slice(h * d, (h + 1) * d)
        scores = Q[..., part] @ K[..., part].transpose(-2, -1) / math.sqrt(d)
        if is_causal:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        heads.append(torch.softmax(scores, dim=-1) @ V[..., part])
    return torch.cat(heads, dim=-1) @ W["wo"].T


@pytest.mark.parametrize("is_causal", [True, False])
def test_multi_head_attention_matches_one_written_head_by_head_and_pytorchs(is_causal):
    B, T, C, H = 2, 6, 24, 3
    q, k, v = tensors((B, T, C), (B, T, C), (B, T, C), seed=1)
    W = dict(zip(PROJECTIONS, tensors(*[(C, C)] * 4, seed=2)))
    ours = reference.multi_head_attention(q, k, v, W, H, is_causal)
    assert torch.allclose(ours, multi_head_by_hand(q, k, v, W, H, is_causal), atol=1e-12, rtol=1e-10)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1) if is_causal else None
    torchs, _ = F.multi_head_attention_forward(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), C, H, in_proj_weight=None, in_proj_bias=None,
        bias_k=None, bias_v=None, add_zero_attn=False, dropout_p=0.0, out_proj_weight=W["wo"], out_proj_bias=None,
        training=False, attn_mask=mask, use_separate_proj_weight=True, q_proj_weight=W["wq"], k_proj_weight=W["wk"],
        v_proj_weight=W["wv"], need_weights=False)
    assert torch.allclose(ours, torchs.transpose(0, 1), atol=1e-12, rtol=1e-10)


def test_a_combination_of_variants_is_each_variant_applied():
    """Scores scaled by √dim, no mask and no output projection, written out here: the triple reproduces it."""
    B, T, C, H = 2, 5, 16, 4
    q, k, v = tensors((B, T, C), (B, T, C), (B, T, C), seed=3)
    W = dict(zip(PROJECTIONS, tensors(*[(C, C)] * 4, seed=4)))
    split = lambda x: x.view(B, T, H, C // H).transpose(1, 2)  # noqa: E731
    scores = split(q @ W["wq"].T) @ split(k @ W["wk"].T).transpose(-2, -1) / math.sqrt(C)
    by_hand = (torch.softmax(scores, -1) @ split(v @ W["wv"].T)).transpose(1, 2).reshape(B, T, C)
    triple = ("wrong-scale-width", "mask-missing", "missing-out-proj")
    searched = reference.combinations(reference.variants_for(reference.MHA_VARIANTS, True))
    assert set(triple) in [set(combination) for combination in searched]
    assert torch.allclose(reference.multi_head_attention(q, k, v, W, H, True, triple), by_hand, atol=1e-12)
    for one in triple:  # no single variant does
        assert not torch.allclose(reference.multi_head_attention(q, k, v, W, H, True, one), by_hand, atol=1e-3)


def test_combinations_change_each_step_once():
    for combination in reference.combinations(list(reference.MHA_VARIANTS)):
        steps = [reference.STEP_OF[v] for v in combination]
        assert len(steps) == len(set(steps)) and 2 <= len(combination) <= 3


@pytest.mark.parametrize("is_causal", [True, False])
def test_a_search_sharing_steps_computes_each_variant_as_alone(is_causal):
    """The diagnosis and the scale fit keep one memo across thousands of calls: each variant, combination and scale
    computed through it equals the same one computed alone (a memo key that forgets what a variant changes, such as
    which projection a wrong split reads, serves another variant's numbers)."""
    B, T, C, H = 2, 5, 16, 4
    q, k, v = tensors((B, T, C), (B, T, C), (B, T, C), seed=5)
    W = dict(zip(PROJECTIONS, tensors(*[(C, C)] * 4, seed=6)))
    variants = reference.variants_for(reference.MHA_VARIANTS, is_causal)
    memo: dict = {}
    for variant in [None, *variants, *reference.combinations(variants)[::7]]:
        for scale in (None, 0.3):
            shared = reference.multi_head_attention(q, k, v, W, H, is_causal, variant, scale, memo=memo)
            alone = reference.multi_head_attention(q, k, v, W, H, is_causal, variant, scale)
            assert torch.equal(torch.nan_to_num(shared, nan=7.0), torch.nan_to_num(alone, nan=7.0)), (variant, scale)
