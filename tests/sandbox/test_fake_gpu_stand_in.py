"""Does the FakeTensor stand-in for a GPU trace what honest code does, and does the tracer name a built-in
attention composite by where the student called it?

The second stand-in (grader/sandbox/fake_gpu.py) runs student code on fake CUDA tensors of a CPU-only
build, where torch's hand-bound Tensor methods raise and autograd aborts the process. Each test here traces
code on it, as the device probe does, and has the parent run the graph on real values: the same values as the
code on the CPU. The composite tests trace code loaded as a submission is, with no worker and no guard.
"""
import json

import pytest
import torch

from grader.graph import decode, run
from grader.graph.decode import GraphRefused
from grader.sandbox import probes, tracing

pytestmark = pytest.mark.unit


def traced_on_the_fake_gpu(function, *values):
    """The graph `function` leaves on the fake stand-in, run by the parent on `values` with devices followed."""
    inputs = [probes._place(v, "fake-cuda") for v in values]
    with probes._device_guard("fake-cuda", []):
        recorder = tracing.trace(lambda *t: list(function(*t)), inputs)
    text, constants = tracing.encode(recorder)
    graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    return run.run(graph, list(values), constants, devices=["cuda"] * len(values), constant_devices=["cpu"] * len(constants))


INDEXING = {
    "slices": lambda x: (x[:, :2, 1:3],),
    "an integer": lambda x: (x[0], x[:, -1]),
    "None and Ellipsis": lambda x: (x[None, ..., 0], x[..., None]),
    "a step": lambda x: (x[:, ::2],),
    "an integer tensor": lambda x: (x[torch.tensor([1, 0], device=x.device)],),
    "a slice set": lambda x: (x.clone().__setitem__((slice(None), 0), 5.0) or x,),
    "a slice set from a tensor": lambda x: _written_into_a_buffer(x),
    "a bool mask set": lambda x: _masked(x),
    "a bool mask of the last dims set": lambda x: _masked_after_an_ellipsis(x),
    "torch.tensor on the device": lambda x: (x + torch.tensor(2.0, device=x.device),
                                             x * torch.tensor([3.0], dtype=x.dtype).to(x.device)),
    "invert, contiguous, new_tensor": lambda x: (
        (~(x > 0)).float(), x.transpose(-1, -2).contiguous(), x * x.new_tensor([2.0])),
}


def _written_into_a_buffer(x):
    """A KV cache's write: new positions copied into a slice of a preallocated buffer on the input's device."""
    buffer = torch.zeros(x.shape[0], x.shape[1] + 2, x.shape[2], device=str(x.device))
    buffer[:, 1:1 + x.shape[1]] = x
    return (buffer,)


def _masked(x):
    scores = x.clone()
    scores[torch.ones_like(scores, dtype=torch.bool).triu(1)] = float("-inf")
    return (scores,)


def _masked_after_an_ellipsis(x):
    scores, keep = x.clone(), torch.ones(x.shape[-2:], dtype=torch.bool, device=x.device).tril()
    scores[..., keep == False] = float("-inf")  # noqa: E712 (the idiom as students write it)
    return (scores,)


@pytest.mark.parametrize("function", INDEXING.values(), ids=INDEXING.keys())
def test_indexing_on_the_fake_gpu_computes_what_it_computes_on_the_cpu(function):
    x = torch.randn(2, 4, 4)
    (outputs, devices) = traced_on_the_fake_gpu(function, x)
    expected = function(x.clone())
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert torch.equal(got, want)
    assert set(devices) == {"cuda"}


def test_a_mask_made_on_the_cpu_meets_the_fake_gpu_as_on_a_gpu():
    def masked(x):
        return (x.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), 0.0),)

    with pytest.raises(RuntimeError, match="found at least two devices, cuda and cpu"):
        traced_on_the_fake_gpu(masked, torch.randn(2, 4, 4))


def test_gradients_turned_on_by_the_code_are_refused_in_python_not_aborted_in_cpp():
    def with_gradients(x):
        with torch.enable_grad():
            leaf = x.clone().requires_grad_()
            return (leaf * 2,)

    with pytest.raises(RuntimeError, match="computes no gradients"):
        traced_on_the_fake_gpu(with_gradients, torch.randn(2, 4))


COMPOSITE = """import torch
import torch.nn.functional as F


def attention(q, k, v):
    eye = torch.eye(q.shape[-1])
    return F.multi_head_attention_forward(
        q, k, v, q.shape[-1], 1, None, None, None, None, False, 0.0, eye, None, training=False, need_weights=True,
        use_separate_proj_weight=True, q_proj_weight=eye, k_proj_weight=eye, v_proj_weight=eye)[0]
"""


def _graph_of_submission(source: str, name: str, *inputs) -> decode.Graph:
    namespace = {}
    exec(compile(source, probes.SUBMISSION_FILE, "exec"), namespace)
    recorder = tracing.trace(lambda *t: [namespace[name](*t)], list(inputs), source_file=probes.SUBMISSION_FILE)
    text, constants = tracing.encode(recorder)
    return decode.decode(bytes(text.numpy().tobytes()), len(constants))


def test_a_built_in_composite_is_named_with_the_students_line():
    x = torch.randn(3, 1, 4)
    graph = _graph_of_submission(COMPOSITE, "attention", x, x, x)
    assert graph.built_in == (("torch.nn.functional.multi_head_attention_forward", 7),)
    assert "torch.nn.functional.multi_head_attention_forward (line 7)" in decode.verdicts(graph)["forbidden"]
    assert not any(decode.ops.verdict(t) == "forbidden" for t in graph.targets()), "only the note names it"


def test_hand_written_attention_carries_no_note():
    source = "import torch\n\n\ndef attention(q, k, v):\n    return torch.softmax(q @ k.mT, -1) @ v\n"
    x = torch.randn(2, 3, 4)
    graph = _graph_of_submission(source, "attention", x, x, x)
    assert graph.built_in == () and decode.verdicts(graph)["forbidden"] == set()


@pytest.mark.parametrize("notes", [
    "not a list", [{"name": "torch.nn.functional.f", "line": -1}], [{"name": "os.system", "line": 1}],
    [{"name": "torch.nn.functional.f", "line": 1, "extra": 0}], [{"name": "torch.a", "line": 1}] * 9,
    [{"name": "torch." + "a" * 300, "line": 1}]], ids=["not a list", "negative line", "not torch", "extra key",
                                                      "too many", "too long"])
def test_notes_the_tracer_never_writes_are_refused(notes):
    text = json.dumps({"format": 1, "inputs": 1, "nodes": [["input", 0], ["output", [{"n": 0}]]], "built_in": notes})
    with pytest.raises(GraphRefused, match="built-in attention notes"):
        decode.decode(text.encode(), 0)
