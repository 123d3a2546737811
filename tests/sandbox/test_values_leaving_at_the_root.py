"""Is every way values leave a tensor for Python seen, however it is spelled, even when the code catches the error?

A stand-in for a GPU holds no values. The tracer sees the operator every spelling ends in at the dispatcher
(`_local_scalar_dense`, `equal`, any operator that answers Python values; grader/sandbox/tracing.py) and answers
it with the value a GPU computes for the same inputs (the graph so far, run on the CPU copies of the inputs:
grader/sandbox/stand_in_values.py), so code that catches the error a stand-in would raise learns nothing: it
takes the GPU's path. The few spellings below the dispatcher are seen as Python calls: `int()`, `float()`, an
index and `.tolist()` read what a GPU tensor hands back through a copy to the CPU, answered as that copy is (a
red team's honest Mistral-style cache read its positions with `int()`); NumPy refuses a GPU tensor, and there the
probe on a stand-in answers `untraceable` with the student's line, so the device check judges nothing. A CPU constant's value is the same on a GPU: reading it on a stand-in is no
such call. A copy of a stand-in's tensor to the CPU (`np.finfo(scores.new_zeros(()).cpu().numpy().dtype)`) is
answered as on a GPU too: a real CPU tensor with the values the graph gives, recorded as a move to the CPU, so a mask
kept there still meets the device mismatch a GPU raises.
"""
import pytest
import torch

from grader.graph import decode, run
from grader.sandbox import graph_probes
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.unit

ANSWERED = {
    "item": "Q.sum().item()",
    "bool": "bool(Q.sum() > 0)",
    "if on a tensor": "1 if Q.sum() > 0 else 0",
    "is_nonzero": "torch.is_nonzero(Q.sum() == Q.sum())",
    "equal": "torch.equal(Q, Q)",
    "allclose": "torch.allclose(Q, Q)",
    "Tensor.equal": "Q.equal(Q)",
    "assert": "torch.isfinite(Q).all() or None",
    # below the dispatcher, read as a GPU tensor reads them, through a copy to the CPU, which is answered
    "int": "int(Q[..., 0, 0].sum())",
    "float": "float(Q.sum())",
    "an index": "[1, 2][(Q.sum() > 0).long()]",
    "tolist": "Q[0, 0, :2].tolist()",
}
BELOW_THE_DISPATCHER = {
    "numpy": "Q.numpy()",
    "a NumPy array": "__import__('numpy').asarray(Q)",
}
STAND_INS = {"meta": "meta", "fake-cuda": "cuda"}
TELLS = ("    try:\n        {body}\n        told = False\n    except Exception:\n        told = True\n"
         "    scale = 3.0 if told else 1.0\n")


def traced(body: str, device: str, Q=None, kept: str = "") -> tuple[dict, list, dict]:
    """The stand-in's answer for code that reads values in a `try`, the inputs, and the code's namespace (`kept`: a
    name the code's module binds to a list, for what the code keeps of its call)."""
    source = (f"import math\nimport torch\n{kept + ' = []' if kept else ''}\n\n"
              "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
              + TELLS.format(body=body)
              + "    return Q @ K.transpose(-2, -1) @ V * scale / math.sqrt(Q.size(-1)), Q @ K.transpose(-2, -1)\n")
    namespace, errors = load_student(source, None)  # the rules off: what the tracer holds alone
    assert errors == []
    Q = torch.randn(2, 3, 4) if Q is None else Q
    return graph_probes.sdpa(namespace, source.splitlines(), Q=Q, K=Q, V=Q, device=device), [Q, Q, Q], namespace


def on_the_cpu(answer: dict, inputs: list, device: str) -> list:
    graph = decode.decode(bytes(answer["graph"].numpy().tobytes()), len(answer["constants"]))
    return run.run(graph, inputs, answer["constants"], devices=[STAND_INS[device]] * 3)[0]


@pytest.mark.parametrize("device", STAND_INS)
@pytest.mark.parametrize("body", ANSWERED.values(), ids=ANSWERED.keys())
def test_values_read_from_a_stand_in_at_the_dispatcher_are_answered_as_on_a_gpu(body, device):
    answer, inputs, namespace = traced(body, device)
    assert "error" not in answer and "untraceable" not in answer, answer.get("error") or answer.keys()
    expected = namespace["scaled_dot_product_attention"](*inputs)  # on the CPU no read raises: scale 1
    for got, want in zip(on_the_cpu(answer, inputs, device), expected):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("device", STAND_INS)
@pytest.mark.parametrize("body", BELOW_THE_DISPATCHER.values(), ids=BELOW_THE_DISPATCHER.keys())
def test_values_read_below_the_dispatcher_leave_the_graph_however_spelled_and_caught(body, device):
    answer = traced(body, device)[0]
    assert "error" not in answer, answer["error"]
    assert answer.get("untraceable", {}).get("line") == 7, answer.keys()


@pytest.mark.parametrize("device", STAND_INS)
def test_the_value_answered_is_the_one_the_inputs_give(device):
    """A branch on the answer takes the path a GPU takes on these inputs, one way or the other."""
    for sign, scale in ((1.0, 2.0), (-1.0, 5.0)):
        answer, inputs, _ = traced("scale_of = 2.0 if Q.sum() > 0 else 5.0\n        K = K * scale_of", device,
                                   Q=sign * torch.rand(2, 3, 4) + sign)
        assert "untraceable" not in answer, answer.keys()
        targets = decode.decode(bytes(answer["graph"].numpy().tobytes()), len(answer["constants"])).targets()
        assert "aten._local_scalar_dense.default" in targets, targets
        scores = on_the_cpu(answer, inputs, device)[1]
        torch.testing.assert_close(scores, inputs[0] @ (inputs[0] * scale).transpose(-2, -1))


@pytest.mark.parametrize("device", STAND_INS)
def test_a_value_resting_on_a_constant_without_values_is_not_answered(device):
    """A tensor made on the stand-in outside the recording has no values anywhere: its read is not answered."""
    source = ("import math\nimport torch\nVALUELESS = torch.ones(3, device='meta')\n\n"
              "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
              + TELLS.format(body="bool(VALUELESS.sum() > 0)")
              + "    return Q @ K.transpose(-2, -1) @ V * scale, Q @ K.transpose(-2, -1)\n")
    namespace, errors = load_student(source, None)
    assert errors == []
    Q = torch.randn(2, 3, 4)
    answer = graph_probes.sdpa(namespace, source.splitlines(), Q=Q, K=Q, V=Q, device=device)
    assert answer.get("untraceable", {}).get("line") == 7, answer.keys()


@pytest.mark.parametrize("device", STAND_INS)
def test_sixteen_reads_are_answered_and_the_seventeenth_leaves_the_graph(device):
    """Each answer runs the graph so far again: past 16 in one trace, a read counts as leaving the stand-in."""
    assert "untraceable" not in traced("[bool(Q.sum() > i) for i in range(16)]", device)[0]
    assert traced("[bool(Q.sum() > i) for i in range(17)]", device)[0].get("untraceable", {}).get("line") == 7


@pytest.mark.parametrize("device", STAND_INS)
def test_a_cpu_constants_value_read_on_a_stand_in_is_no_such_call(device):
    answer = traced("scale = torch.tensor(4.0).sqrt().item()", device)[0]
    assert "error" not in answer and "untraceable" not in answer, answer.keys()


COPIES_TO_THE_CPU = {
    ".cpu()": "(Q * 2).cpu()",
    'to("cpu")': '(Q * 2).to("cpu")',
    "to(a CPU tensor)": "(Q * 2).to(torch.zeros(()))",
    "detach().to(device=)": '(Q * 2).detach().to(device=torch.device("cpu"))',
}


@pytest.mark.parametrize("device", STAND_INS)
@pytest.mark.parametrize("copy", COPIES_TO_THE_CPU.values(), ids=COPIES_TO_THE_CPU.keys())
def test_a_copy_to_the_cpu_on_a_stand_in_holds_the_values_a_gpu_copies(copy, device):
    """NumPy reads the copy (ESPnet's `numpy.finfo(....numpy().dtype)` through `.cpu()`): nothing leaves the graph,
    the code takes no error path, and the copy holds the values the inputs give."""
    answer, inputs, namespace = traced(f"COPIES.append({copy}.numpy().copy())", device, kept="COPIES")
    assert "error" not in answer and "untraceable" not in answer, answer.get("error") or answer.keys()
    expected = namespace["scaled_dot_product_attention"](*inputs)  # on the CPU the copy is the tensor itself: scale 1
    for got, want in zip(on_the_cpu(answer, inputs, device), expected):
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(torch.from_numpy(namespace["COPIES"][0]), inputs[0] * 2)


@pytest.mark.parametrize("device", STAND_INS)
def test_a_mask_copied_to_the_cpu_and_kept_there_meets_the_device_mismatch_of_a_gpu(device):
    """The hostile twin of the copy above: a causal mask made on the input's device, then taken to the CPU."""
    source = ("import math\nimport torch\n\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
              "    T = Q.size(-2)\n"
              "    future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1).cpu()\n"
              "    scores = (Q @ K.transpose(-2, -1)).masked_fill(future, float('-inf'))\n"
              "    weights = scores.softmax(-1)\n"
              "    return weights @ V, weights\n")
    namespace, errors = load_student(source, None)
    assert errors == []
    Q = torch.randn(2, 3, 4)
    answer = graph_probes.sdpa(namespace, source.splitlines(), Q=Q, K=Q, V=Q, device=device)
    assert "Expected all tensors to be on the same device" in answer.get("error", {}).get("message", ""), answer
    assert answer["error"]["where"]["line"] == 8, answer["error"]


@pytest.mark.parametrize("device", STAND_INS)
def test_an_output_copied_to_the_cpu_is_on_the_cpu_where_the_parent_runs_the_graph(device):
    """The copy is a node of the graph, a move to the CPU: the parent, which judges devices from the graph it runs
    itself, sees the output leave the device however the worker answered the copy."""
    source = ("import math\nimport torch\n\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
              "    weights = (Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))).softmax(-1)\n"
              "    return (weights @ V).cpu(), weights\n")
    namespace, errors = load_student(source, None)
    assert errors == []
    Q = torch.randn(2, 3, 4)
    answer = graph_probes.sdpa(namespace, source.splitlines(), Q=Q, K=Q, V=Q, device=device)
    assert "error" not in answer and "untraceable" not in answer, answer.get("error") or answer.keys()
    assert answer["outputs"][0]["device"] == "cpu"
    graph = decode.decode(bytes(answer["graph"].numpy().tobytes()), len(answer["constants"]))
    outputs, devices = run.run(graph, [Q, Q, Q], answer["constants"], devices=[STAND_INS[device]] * 3)
    assert devices == ["cpu", STAND_INS[device]]
    torch.testing.assert_close(outputs[0], namespace["scaled_dot_product_attention"](Q, Q, Q)[0])
