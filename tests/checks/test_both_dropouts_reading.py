"""With both dropouts at args.dropout, as the model trains, are both read from the outputs whatever the code's layout?
Runs of one module under one seed, each on its own inputs (as the dropout check's last runs are), made here with the
two layers in their places, masks drawn in the heads-first or the positions-first layout, resid_dropout before or
after wo; and with one layer, none, noise, or masks that change from run to run. Read back by the check. No sandbox.
The code of red team 3's route r15 drops only where the two rates differ: here, it is the run without any dropout."""
import math

import pytest
import torch

from grader.checks.mha.dropout_patterns import both_layers_dropped, both_runs

pytestmark = pytest.mark.unit

# B, T, dim, n_heads: the ends of the ranges the dropout check draws from (T 5 to 8, heads 2 to 4, head_dim 2 to 5)
SIZES = [(2, 5, 2 * 2, 2), (4, 8, 4 * 2, 4), (4, 8, 4 * 5, 4), (3, 6, 3 * 3, 3), (2, 7, 2 * 5, 2)]
P = 0.5
HONEST = {"weights and output": ("weights", "output"), "weights and heads": ("weights", "heads"),
          "positions-first masks": ("weights positions-first", "output")}
DROPS_TOO_LITTLE = {"no dropout (route r15)": (), "only the output": ("output",), "only the weights": ("weights",),
                    "noise for the output's dropout": ("weights", "noise"),
                    "weights doubled, none dropped": ("weights doubled", "output")}


def module_runs(sizes: tuple, seed: int, places: tuple[str, ...], *, same_masks: bool = True):
    """The causal module's float32 outputs on both_runs() inputs of its own each, its dropouts where `places` say,
    every run drawing from one seed (or from another each, `same_masks=False`)."""
    B, T, dim, heads = sizes
    d, s = dim // heads, 1 / (1 - P)
    g = torch.Generator().manual_seed(2000 + seed)
    weights = {name: torch.randn(dim, dim, generator=g) / math.sqrt(dim) for name in ("wq", "wk", "wv", "wo")}
    calls, outs = [], []
    for run in range(both_runs(T, d)):
        x = torch.randn(B, T, dim, generator=g)
        draw = torch.Generator().manual_seed(seed + (0 if same_masks else 7919 * (run + 1)))
        q, k, v = ((x @ weights[f"w{name}"].T).view(B, T, heads, d).transpose(1, 2) for name in "qkv")  # (B, H, T, d)
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        a = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(future, -math.inf), dim=-1)
        if "weights" in places:
            a = a * (torch.rand(B, heads, T, T, generator=draw) > P) * s
        if "weights doubled" in places:  # dropout's scale without its zeros
            a = a * s
        if "weights positions-first" in places:  # drawn as (B, T, H, T), as code that keeps heads second draws it
            a = a * (torch.rand(B, T, heads, T, generator=draw) > P).transpose(1, 2) * s
        y = (a @ v).transpose(1, 2).reshape(B, T, dim)  # (B, T, C)
        if "heads" in places:
            y = y * (torch.rand(B, T, dim, generator=draw) > P) * s
        y = y @ weights["wo"].T
        if "output" in places:
            y = y * (torch.rand(B, T, dim, generator=draw) > P) * s
        if "noise" in places:
            y = y + 1e-3 * torch.randn(y.shape, generator=draw)
        calls.append({"q": x, "k": x, "v": x})
        outs.append(y)
    return outs, calls, weights, heads


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("honest", HONEST)
def test_both_layers_are_read_whatever_the_layout(honest, seed, sizes):
    outs, calls, weights, heads = module_runs(sizes, seed, HONEST[honest])
    assert both_layers_dropped(outs, calls, weights, heads, P)


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("too_little", DROPS_TOO_LITTLE)
def test_a_module_that_drops_less_than_both_layers_is_not_read_as_both(too_little, seed, sizes):
    outs, calls, weights, heads = module_runs(sizes, seed, DROPS_TOO_LITTLE[too_little])
    assert not both_layers_dropped(outs, calls, weights, heads, P)


@pytest.mark.parametrize("sizes", SIZES[:2])
def test_masks_that_change_from_run_to_run_under_one_seed_are_no_dropout(sizes):
    """nn.Dropout's masks depend on the seed alone: masks drawn from the inputs' values are another thing."""
    outs, calls, weights, heads = module_runs(sizes, 0, ("weights", "output"), same_masks=False)
    assert not both_layers_dropped(outs, calls, weights, heads, P)
