"""Is the `kv_cache` lab's float64 reference (grader/exercises/kv_cache/reference.py) right?

Oracles it does not share code with: torch's own attention (`F.scaled_dot_product_attention`, its `enable_gqa`
grouping and an explicit boolean mask) and hand-made tensors; the cached pass against the full one. Each named
mistake (a keyword flag) must differ from the right computation where the mistake shows, and only there."""
import pytest
import torch
import torch.nn.functional as F

from grader.exercises.kv_cache import reference

pytestmark = pytest.mark.unit

B, T, C, HEADS, KV_HEADS, MAX_SEQ_LEN, MAX_BATCH = 2, 9, 40, 8, 2, 12, 3  # head_dim 5


def drawn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def layer_weights(kv_heads=KV_HEADS, seed=10):
    d = C // HEADS
    return {"wq": drawn(HEADS * d, C, seed=seed) / C ** 0.5, "wk": drawn(kv_heads * d, C, seed=seed + 1) / C ** 0.5,
            "wv": drawn(kv_heads * d, C, seed=seed + 2) / C ** 0.5, "wo": drawn(C, HEADS * d, seed=seed + 3) / C ** 0.5}


def torch_gqa(x, weights, kv_heads):
    """The full causal pass by torch's own pieces: F.linear and F.scaled_dot_product_attention(enable_gqa=True)."""
    d = C // HEADS
    q = F.linear(x, weights["wq"]).unflatten(-1, (HEADS, d)).transpose(1, 2)  # (B, H, T, d)
    k = F.linear(x, weights["wk"]).unflatten(-1, (kv_heads, d)).transpose(1, 2)  # (B, H_kv, T, d)
    v = F.linear(x, weights["wv"]).unflatten(-1, (kv_heads, d)).transpose(1, 2)  # (B, H_kv, T, d)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, H, T, d)
    return F.linear(y.transpose(1, 2).flatten(2), weights["wo"])  # (B, T, C)


def empty_caches(kv_heads=KV_HEADS):
    cache = torch.zeros(MAX_BATCH, kv_heads, MAX_SEQ_LEN, C // HEADS, dtype=torch.float64)
    return cache, cache.clone()


def in_steps(x, weights, steps, kv_heads=KV_HEADS, **mistake):
    cache_k, cache_v = empty_caches(kv_heads)
    outputs, start = [], 0
    for length in steps:
        step = reference.gqa_forward(x[:, start:start + length], weights, HEADS, kv_heads, cache_k, cache_v, start,
                                     **mistake)
        outputs, cache_k, cache_v, start = outputs + [step.y], step.cache_k, step.cache_v, start + length
    return torch.cat(outputs, dim=1)


def test_repeat_kv_gives_output_head_h_the_input_head_h_over_n_rep():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)
    out = reference.repeat_kv(x, 2)
    assert out.shape == (2, 6, 4, 5)
    assert [h for h in range(6) if torch.equal(out[:, h], x[:, h // 2])] == list(range(6))
    assert torch.equal(reference.repeat_kv(x, 1), x)
    assert torch.equal(reference.repeat_kv(x, 3), torch.repeat_interleave(x, 3, dim=1))


def test_the_tiled_mistake_gives_output_head_h_the_input_head_h_mod_h_kv():
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)
    out = reference.repeat_kv(x, 2, tile=True)
    assert [h for h in range(6) if torch.equal(out[:, h], x[:, h % 3])] == list(range(6))
    assert not torch.equal(out, reference.repeat_kv(x, 2))


@pytest.mark.parametrize("start_pos", [0, 4])
def test_attend_is_torchs_attention_with_the_mask_offset_by_start_pos(start_pos):
    new = 3
    q, keys, values = drawn(B, HEADS, new, 5, seed=1), drawn(B, HEADS, start_pos + new, 5, seed=2), \
        drawn(B, HEADS, start_pos + new, 5, seed=3)
    visible = torch.ones(new, start_pos + new, dtype=torch.bool).tril(diagonal=start_pos)  # key j <= start_pos + i
    out, weights = reference.attend(q, keys, values, start_pos)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    assert (weights[..., ~visible] == 0).all(), "a hidden key's weight is not exactly 0"
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, HEADS, new, dtype=torch.float64))


@pytest.mark.parametrize("kv_heads", [1, 2, 4, 8])
def test_the_full_pass_is_torchs_grouped_query_attention(kv_heads):
    weights, x = layer_weights(kv_heads), drawn(B, T, C, seed=4)
    torch.testing.assert_close(reference.gqa_forward(x, weights, HEADS, kv_heads).y, torch_gqa(x, weights, kv_heads))


@pytest.mark.parametrize("steps", [[9], [5, 1, 1, 1, 1], [5, 3, 1], [1] * 9])
def test_decoding_with_the_cache_is_the_full_pass(steps):
    weights, x = layer_weights(), drawn(B, T, C, seed=5)
    torch.testing.assert_close(in_steps(x, weights, steps), reference.gqa_forward(x, weights, HEADS, KV_HEADS).y)


def test_the_caches_come_back_new_and_the_given_ones_are_left_as_they_were():
    weights, x = layer_weights(), drawn(B, 4, C, seed=6)
    cache_k, cache_v = empty_caches()
    step = reference.gqa_forward(x, weights, HEADS, KV_HEADS, cache_k, cache_v, 0)
    assert not cache_k.any() and not cache_v.any()
    assert step.cache_k[:B, :, :4].abs().sum() > 0 and not step.cache_k[B:].any() and not step.cache_k[:, :, 4:].any()


def test_gradients_flow_to_x_and_every_layer():
    weights = {name: w.requires_grad_(True) for name, w in layer_weights().items()}
    x = drawn(B, T, C, seed=7).requires_grad_(True)
    reference.gqa_forward(x, weights, HEADS, KV_HEADS).y.square().sum().backward()
    assert all(t.grad is not None and t.grad.abs().sum() > 0 for t in [x, *weights.values()])
    assert torch.autograd.gradcheck(lambda x: reference.gqa_forward(x, weights, HEADS, KV_HEADS).y, x[:, :3].detach()
                                    .clone().requires_grad_(True))


def test_each_named_mistake_changes_the_output_where_it_shows_and_only_there():
    weights, x = layer_weights(), drawn(B, T, C, seed=8)
    right = reference.gqa_forward(x, weights, HEADS, KV_HEADS).y
    for mistake in ({"tile": True}, {"scale_by": "dim"}, {"scale_by": "one"}):
        assert not torch.allclose(reference.gqa_forward(x, weights, HEADS, KV_HEADS, **mistake).y, right), mistake
    # the mask's offset shows only after a cached prompt: not in one pass from position 0
    torch.testing.assert_close(reference.gqa_forward(x, weights, HEADS, KV_HEADS, offset_mask=False).y, right)
    not_offset = in_steps(x, weights, [5, 1, 3], offset_mask=False)
    torch.testing.assert_close(not_offset[:, :5], right[:, :5])
    assert not torch.allclose(not_offset[:, 5:], right[:, 5:])
    # tiling and grouping agree when every query head has its own key/value head
    one_each = layer_weights(kv_heads=HEADS)
    torch.testing.assert_close(reference.gqa_forward(x, one_each, HEADS, HEADS, tile=True).y,
                               reference.gqa_forward(x, one_each, HEADS, HEADS).y)
