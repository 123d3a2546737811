"""Do the parent's requests carry every tensor to the worker as it was, without torch.save's zips?"""
from __future__ import annotations

import pickle

import pytest
import torch

from grader.sandbox import request_tensors

pytestmark = pytest.mark.unit

SENT = {
    "float32": torch.randn(2, 3, 4),
    "empty": torch.zeros(0, 4),
    "scalar": torch.tensor(3.5, dtype=torch.float64),
    "bool mask": torch.ones(3, 3, dtype=torch.bool).triu(1),
    "bfloat16": torch.randn(4, 4).to(torch.bfloat16),
    "complex": torch.randn(3, dtype=torch.complex64),
    "transposed view": torch.randn(4, 5).t(),
    "strided view": torch.randn(9)[::2],
    "leaf needing grad": torch.randn(2, 2, requires_grad=True),
}


@pytest.mark.parametrize("name", SENT)
def test_a_request_tensor_arrives_with_its_values_dtype_shape_and_grad_flag(name):
    sent = SENT[name]
    received = pickle.loads(request_tensors.dumps({"probe": "sdpa", "args": {"q": sent, "calls": [{"k": sent}]}}))
    for tensor in (received["args"]["q"], received["args"]["calls"][0]["k"]):
        assert type(tensor) is torch.Tensor and tensor.dtype == sent.dtype and tensor.shape == sent.shape
        assert torch.equal(tensor.detach(), sent.detach()) and tensor.requires_grad == sent.requires_grad
        assert tensor.is_contiguous()


def test_no_tensor_goes_through_torch_save():
    """pickle's default reduces a tensor's storage with torch.save: a zip archive per tensor."""
    message = request_tensors.dumps({"q": torch.randn(2, 4, 8), "k": torch.randn(2, 4, 8)})
    assert b"PK\x03\x04" not in message and b"_load_from_bytes" not in message
    assert len(message) < 2 * (2 * 4 * 8 * 4) + 400
