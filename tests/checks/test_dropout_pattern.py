"""Does "dropout applied" need dropout's own pattern, in its own place? Module outputs on the pattern probe's inputs,
made here with each dropout placement (and with noise in train(), which only looks random), read back by the check.
No sandbox: milliseconds."""
import math

import pytest
import torch

from grader.checks.mha.state import dropout_pattern, pattern_inputs

pytestmark = pytest.mark.unit

B, T, DIM, HEADS = 2, 4, 32, 4  # the probe's sizes: head_dim 8 holds a channel per position and one more
P = 0.5


def dropped(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x * torch.empty_like(x).bernoulli_(1 - P, generator=g) / (1 - P)


def train_output(scale: float, g: torch.Generator, *, on: tuple[str, ...] = (), noise: float = 0.0) -> torch.Tensor:
    """The causal module's train() output with dropout where `on` says: "weights" (attn_dropout's place),
    "heads" (weights @ V), "output" (resid_dropout's place); `noise` adds randn_like scaled noise to the output."""
    weights, call = pattern_inputs(scale)
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


@pytest.mark.parametrize("seed", range(20))
def test_each_layer_is_read_in_its_own_place_alone_and_together(seed):
    g, scale = torch.Generator().manual_seed(seed), 0.5 + seed / 20
    assert dropout_pattern(train_output(scale, g, on=("weights",)), P, scale) == "weights"
    assert dropout_pattern(train_output(scale, g, on=("output",)), P, scale) == "output"
    assert dropout_pattern(train_output(scale, g, on=("weights", "output")), P, scale) == "both"


@pytest.mark.parametrize("seed", range(20))
def test_noise_and_no_dropout_show_no_pattern_and_dropped_heads_are_not_weights(seed):
    g, scale = torch.Generator().manual_seed(seed), 0.5 + seed / 20
    assert dropout_pattern(train_output(scale, g, noise=P * 1e-5), P, scale) is None
    assert dropout_pattern(train_output(scale, g, noise=0.1), P, scale) is None
    assert dropout_pattern(train_output(scale, g), P, scale) is None
    assert dropout_pattern(train_output(scale, g, on=("heads",)), P, scale) == "output"
    noisy_weights = train_output(scale, g, on=("weights",), noise=1e-3)
    assert dropout_pattern(noisy_weights, P, scale) is None


def test_a_wrong_scale_for_the_survivors_is_no_dropout():
    g, scale = torch.Generator().manual_seed(0), 1.0
    unscaled = train_output(scale, g, on=("output",)) * (1 - P)  # dropped, survivors never scaled by 1/(1-p)
    assert dropout_pattern(unscaled, P, scale) is None
