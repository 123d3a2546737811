"""Does "dropout applied" need dropout's own pattern, in its own place? Module outputs on the pattern probe's inputs,
made here with each dropout placement (and with noise in train(), which only looks random), read back by the check.
No sandbox: milliseconds."""
import math

import pytest
import torch

from grader.checks.mha.state import dropout_pattern, pattern_inputs

pytestmark = pytest.mark.unit

# B, T, dim, n_heads: the ends of the ranges the dropout check draws from (T from 5 to 8, heads from 2 to 4, a head_dim
# from 2 to 8), and two between, one with head_dim past T
SIZES = [(2, 5, 2 * 2, 2), (4, 8, 4 * 8, 4), (3, 6, 3 * 3, 3), (2, 5, 2 * 7, 2)]
P = 0.5


def dropped(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x * torch.empty_like(x).bernoulli_(1 - P, generator=g) / (1 - P)


def train_output(sizes: tuple, scale: float, g: torch.Generator, *, on: tuple[str, ...] = (),
                 noise: float = 0.0) -> torch.Tensor:
    """The causal module's train() output with dropout where `on` says: "weights" (attn_dropout's place),
    "heads" (weights @ V), "output" (resid_dropout's place); `noise` adds randn_like scaled noise to the output."""
    B, T, DIM, HEADS = sizes
    weights, call = pattern_inputs(sizes, scale)
    d = DIM // HEADS
    q, k, v = ((call[name] @ weights[f"w{name}"].T).view(B, T, HEADS, d).transpose(1, 2) for name in "qkv")
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -math.inf)
    a = torch.softmax(scores, dim=-1)
    a = dropped(a, g) if "weights" in on else a
    y = a @ v
    y = dropped(y, g) if "heads" in on else y
    y = y.transpose(1, 2).reshape(B, T, DIM) @ weights["wo"].T
    y = dropped(y, g) if "output" in on else y
    return y + noise * torch.randn(y.shape, generator=g)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(20))
def test_each_layer_is_read_in_its_own_place_alone_and_together(seed, sizes):
    g, scale = torch.Generator().manual_seed(seed), 0.5 + seed / 20
    assert dropout_pattern(train_output(sizes, scale, g, on=("weights",)), sizes, P, scale) == "weights"
    assert dropout_pattern(train_output(sizes, scale, g, on=("output",)), sizes, P, scale) == "output"
    assert dropout_pattern(train_output(sizes, scale, g, on=("weights", "output")), sizes, P, scale) == "both"


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(20))
def test_noise_and_no_dropout_show_no_pattern_and_dropped_heads_are_not_weights(seed, sizes):
    g, scale = torch.Generator().manual_seed(seed), 0.5 + seed / 20
    assert dropout_pattern(train_output(sizes, scale, g, noise=P * 1e-5), sizes, P, scale) is None
    assert dropout_pattern(train_output(sizes, scale, g, noise=0.1), sizes, P, scale) is None
    assert dropout_pattern(train_output(sizes, scale, g), sizes, P, scale) is None
    assert dropout_pattern(train_output(sizes, scale, g, on=("heads",)), sizes, P, scale) == "output"
    noisy_weights = train_output(sizes, scale, g, on=("weights",), noise=1e-3)
    assert dropout_pattern(noisy_weights, sizes, P, scale) is None


@pytest.mark.parametrize("sizes", SIZES)
def test_a_wrong_scale_for_the_survivors_is_no_dropout(sizes):
    g, scale = torch.Generator().manual_seed(0), 1.0
    unscaled = train_output(sizes, scale, g, on=("output",)) * (1 - P)  # dropped, survivors never scaled by 1/(1-p)
    assert dropout_pattern(unscaled, sizes, P, scale) is None
