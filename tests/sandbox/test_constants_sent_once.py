"""Does a constant that several graphs of one answer read cross each pipe once, and is the answer still bounded?

The red team's honest hand-in kept its causal mask for 1024 positions as a module-level tensor: each of the nine
MultiHeadAttention calls of one answer carried its own 4 MiB copy, the 37.8 MB frame was over the 16 MiB cap, and
the parent called honest code tampering. Here the tracer runs in this process, without a worker.
"""
from __future__ import annotations

import pickle

import pytest
import torch

from grader.sandbox import answers, request_tensors, tracing, worker

pytestmark = pytest.mark.unit

MASK_BYTES = 1024 * 1024 * 4  # a float32 mask for 1024 positions
FRAME_CAP = 16 << 20  # README: an answer frame's cap


def graphs_reading(constant: torch.Tensor, calls: int, copies: tracing.ConstantCopies | None) -> dict:
    """An answer as the mha probe makes it: one graph per call, each reading all of `constant`."""
    graphs = []
    for _ in range(calls):
        text, constants = tracing.encode(tracing.trace(lambda x: [x + constant], [torch.zeros(1, 1024)],
                                                       copies=copies))
        graphs.append({"graph": text, "constants": constants})
    return {"calls": graphs}


def test_a_constant_nine_calls_read_is_one_copy_in_one_frame_under_the_cap():
    mask = torch.full((1024, 1024), float("-inf")).triu(1)
    frame = worker.encode(graphs_reading(mask, 9, tracing.ConstantCopies()))
    assert len(frame) < 2 * MASK_BYTES < FRAME_CAP, len(frame)
    decoded = answers.decode(frame)  # the parent's bound counts the shared tensor once
    sent = [call["constants"][0] for call in decoded["calls"]]
    assert all(tensor is sent[0] for tensor in sent) and torch.equal(sent[0], mask)
    # and once again on the parent's pipe to the judge
    assert len(request_tensors.dumps({"traced": decoded})) < 2 * MASK_BYTES
    assert pickle.loads(request_tensors.dumps({"traced": decoded}))["traced"]["calls"][8]["constants"][0].shape == (1024, 1024)


def test_a_constant_changed_in_place_between_calls_is_sent_again_with_its_new_values():
    counter = torch.zeros(4)
    copies = tracing.ConstantCopies()
    first = tracing.trace(lambda x: [x + counter], [torch.zeros(4)], copies=copies)
    counter.add_(1)
    second = tracing.trace(lambda x: [x + counter], [torch.zeros(4)], copies=copies)
    assert first.constants[0].tolist() == [0.0] * 4 and second.constants[0].tolist() == [1.0] * 4


def test_a_slice_of_a_module_level_tensor_sends_only_the_slice():
    mask = torch.full((1, 1, 1024, 1024), float("-inf")).triu(1)
    recorder = tracing.trace(lambda x: [x + mask[:, :, :4, :4]], [torch.zeros(1, 2, 4, 4)])
    (constant,) = recorder.constants
    assert constant.shape == (1, 1, 4, 4) and constant.untyped_storage().nbytes() == 16 * 4
    assert torch.equal(constant, mask[:, :, :4, :4])


def test_distinct_tensors_over_one_storage_each_count_their_elements():
    """Sharing is counted per tensor object, never per storage: views that claim more than they store stay bounded."""
    storage = torch.zeros(1 << 20)
    views = [storage.view(1024, 1024) for _ in range(5)]  # 5 Mi elements named over one 1 Mi storage
    with pytest.raises(answers.AnswerRefused, match="elements"):
        answers.decode(worker.encode({"views": views}))
    answers.decode(worker.encode({"views": [views[0]] * 5}))  # one tensor named five times: 1 Mi elements
