"""Does a probe hand the code its inputs as real use does, so that no plain property of them tells a probe apart?

In training, inputs come from a projection: they need grad and are no leaves; the module's parameters need grad in
every regime; in inference, gradients are off. Part 1 meets Part 2's heads after `transpose(1, 2)` as well as
contiguous tensors, with the same values either way (the parent lays its own inputs out the same way).
"""
import pytest
import torch

from grader.graph.layouts import laid_out
from grader.sandbox.graph_probes import in_regime, regime_on
from grader.sandbox.probes import _place

pytestmark = pytest.mark.unit


def test_in_training_the_inputs_need_grad_and_are_made_by_an_operation():
    for layout in ("contiguous", "heads", "columns"):
        q, = in_regime([torch.randn(2, 3, 5, 4)], "training", layout)
        assert q.requires_grad and not q.is_leaf and q.grad_fn is not None, layout


def test_in_training_an_in_place_edit_of_an_input_is_allowed_as_on_a_projection():
    q, = in_regime([torch.randn(2, 3, 5, 4)], "training", "heads")
    q.mul_(2)  # a leaf that needs grad (or a view of one) refuses this; a projection's output does not


def test_in_inference_the_inputs_are_plain():
    q, = in_regime([torch.randn(2, 3, 5, 4)], "inference", "contiguous")
    assert not q.requires_grad and q.is_leaf and q.is_contiguous()


def test_the_heads_layout_is_what_part_two_hands_over():
    x = torch.randn(2, 3, 5, 4)
    heads = laid_out(x, "heads")
    made_by_part_two = x.transpose(1, 2).contiguous().transpose(1, 2)  # (B, T, H, d) storage, seen as (B, H, T, d)
    assert torch.equal(heads, x) and heads.stride() == made_by_part_two.stride()
    assert not heads.is_contiguous() and heads.stride(-1) == 1


def test_the_columns_layout_stores_each_matrix_transposed_and_without_leading_dims_stands_in_for_heads():
    x = torch.randn(5, 4)
    assert torch.equal(laid_out(x, "heads"), x) and laid_out(x, "heads").stride() == (1, 5)
    assert laid_out(torch.randn(2, 5, 4), "columns").stride(-2) == 1


def test_the_fake_stand_in_runs_in_inference_and_a_request_without_a_regime_follows_its_gradients():
    assert regime_on("training", False, "fake-cuda") == "inference"
    assert regime_on("training", False, "meta") == "training"
    assert regime_on(None, True, "cpu") == "training" and regime_on(None, False, "cpu") == "inference"


@pytest.mark.parametrize("device", ["meta", "fake-cuda"])
def test_every_layout_reaches_the_code_on_each_stand_in_with_the_cpus_strides(device):
    """On the FakeTensor, torch's own `contiguous` has no kernel of "cuda" in a CPU-only build: a layout made there
    outside the stand-in's bindings raised in the grader's code, so every call in that layout judged nothing."""
    x = torch.randn(2, 3, 5, 4)
    for layout in ("contiguous", "heads", "columns"):
        for regime in ("training", "inference"):
            q, = in_regime([_place(x, device)], regime_on(regime, False, device), layout)
            assert q.stride() == laid_out(x, layout).stride(), (layout, regime)
            assert q.device.type == {"meta": "meta", "fake-cuda": "cuda"}[device]
