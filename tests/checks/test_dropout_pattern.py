"""Does "dropout applied" need dropout's own pattern, in its own place, read at ordinary weights? Module outputs on
random weights and inputs (as the dropout check's own train() runs have them), made here with each dropout placement
(and with noise in train(), which only looks random), read back by the check. No sandbox: milliseconds."""
import math

import pytest
import torch

from grader.checks.mha.dropout_patterns import dropout_pattern

pytestmark = pytest.mark.unit

# B, T, dim, n_heads: the ends of the ranges the dropout check draws from (T from 5 to 8, heads from 2 to 4, a head_dim
# from 2 to 5), and two between
SIZES = [(2, 5, 2 * 2, 2), (4, 8, 4 * 5, 4), (3, 6, 3 * 3, 3), (2, 7, 2 * 5, 2)]
P = 0.5


def weights_and_call(sizes: tuple, seed: int) -> tuple[dict, dict]:
    B, T, dim, _ = sizes
    g = torch.Generator().manual_seed(1000 + seed)
    weights = {name: torch.randn(dim, dim, generator=g) / math.sqrt(dim) for name in ("wq", "wk", "wv", "wo")}
    x = torch.randn(B, T, dim, generator=g)
    return weights, {"q": x, "k": x, "v": x}


def train_output(sizes: tuple, weights: dict, call: dict, g: torch.Generator, *, on: tuple[str, ...] = (),
                 noise: float = 0.0, survivors: float = 1 / (1 - P)) -> torch.Tensor:
    """The causal module's output in float32, with dropout where `on` says: "weights" (attn_dropout's place), "heads"
    (weights @ V), "output" (resid_dropout's place), each drawn from `g` in that order, kept values scaled by
    `survivors`; `noise` adds randn scaled noise to the output."""
    B, T, dim, heads = sizes
    d = dim // heads

    def dropped(x: torch.Tensor) -> torch.Tensor:
        return x * torch.empty_like(x).bernoulli_(1 - P, generator=g) * survivors

    q, k, v = ((call[name] @ weights[f"w{name}"].T).view(B, T, heads, d).transpose(1, 2) for name in "qkv")
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -math.inf)
    a = torch.softmax(scores, dim=-1)
    a = dropped(a) if "weights" in on else a
    y = a @ v
    y = dropped(y) if "heads" in on else y
    y = y.transpose(1, 2).reshape(B, T, dim) @ weights["wo"].T
    y = dropped(y) if "output" in on else y
    return y + noise * torch.randn(y.shape, generator=g)


def read(out: torch.Tensor, sizes: tuple, weights: dict, call: dict, seed: int) -> str | None:
    plain = train_output(sizes, weights, call, torch.Generator())
    return dropout_pattern(out, plain, call, weights, sizes[3], P, seed)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(20))
def test_each_layer_is_read_in_its_own_place_at_ordinary_weights(seed, sizes):
    weights, call = weights_and_call(sizes, seed)
    g = torch.Generator().manual_seed(seed)
    for place in ("weights", "output", "heads"):
        assert read(train_output(sizes, weights, call, g, on=(place,)), sizes, weights, call, seed) == place
    drawn_from_the_seed = train_output(sizes, weights, call, torch.Generator().manual_seed(seed), on=("weights", "output"))
    assert read(drawn_from_the_seed, sizes, weights, call, seed) == "both"


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(20))
def test_noise_and_no_dropout_show_no_pattern(seed, sizes):
    weights, call = weights_and_call(sizes, seed)
    g = torch.Generator().manual_seed(seed)
    assert read(train_output(sizes, weights, call, g, noise=P * 1e-5), sizes, weights, call, seed) is None
    assert read(train_output(sizes, weights, call, g, noise=0.1), sizes, weights, call, seed) is None
    assert read(train_output(sizes, weights, call, g), sizes, weights, call, seed) is None
    noisy_weights = train_output(sizes, weights, call, g, on=("weights",), noise=1e-3)
    assert read(noisy_weights, sizes, weights, call, seed) is None
    both_from_another_draw = train_output(sizes, weights, call, g, on=("weights", "output"))
    assert read(both_from_another_draw, sizes, weights, call, seed) is None


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("place", ["weights", "output", "heads"])
def test_a_wrong_scale_for_the_survivors_is_no_dropout(sizes, place):
    weights, call = weights_and_call(sizes, 0)
    unscaled = train_output(sizes, weights, call, torch.Generator().manual_seed(0), on=(place,), survivors=1.0)
    assert read(unscaled, sizes, weights, call, 0) is None


@pytest.mark.parametrize("relative_error", [0.95e-4, -0.95e-4])
def test_attention_weights_dropped_are_read_through_an_error_just_inside_the_tolerance(relative_error):
    """float32 code may sit anywhere inside the documented tolerance (atol 1e-5, rtol 1e-4): an output off by
    0.95e-4 of itself still shows attn_dropout's pattern. Sizes drawn across the dropout check's ranges: at such
    an error the nearest sum for a head, in plain squares, is now and then another key choice than the drawn one
    (about one draw in twenty), which the search must see past."""
    missed = []
    for seed in range(150):
        g = torch.Generator().manual_seed(seed)
        B, T, heads, head_dim = (int(torch.randint(lo, hi, (), generator=g)) for lo, hi in ((2, 5), (5, 9), (2, 5), (2, 6)))
        sizes = (B, T, heads * head_dim, heads)
        weights, call = weights_and_call(sizes, seed)
        out = train_output(sizes, weights, call, g, on=("weights",)).double() * (1 + relative_error)
        if read(out, sizes, weights, call, seed) != "weights":
            missed.append((seed, sizes))
    assert not missed
