"""Is every way values leave a tensor for Python seen, however it is spelled, even when the code catches the error?

A stand-in for a GPU holds no values: each spelling below raises on both (or copies out), and not on a GPU, so code
that catches it tells the stand-ins from a GPU. The tracer sees the operator every spelling ends in at the
dispatcher (`_local_scalar_dense`, `equal`, any operator that answers Python values; grader/sandbox/tracing.py),
and the probe on a stand-in answers `untraceable` with the student's line, so the device check judges nothing
there. A CPU constant's value is the same on a GPU: reading it on a stand-in is no such call.
"""
import pytest
import torch

from grader.sandbox import graph_probes
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.unit

SPELLINGS = {
    "item": "Q.sum().item()",
    "bool": "bool(Q.sum() > 0)",
    "if on a tensor": "1 if Q.sum() > 0 else 0",
    "int": "int(Q[..., 0, 0].sum())",
    "float": "float(Q.sum())",
    "an index": "[1, 2][(Q.sum() > 0).long()]",
    "is_nonzero": "torch.is_nonzero(Q.sum() == Q.sum())",
    "equal": "torch.equal(Q, Q)",
    "allclose": "torch.allclose(Q, Q)",
    "Tensor.equal": "Q.equal(Q)",
    "tolist": "Q.tolist()",
    "numpy": "Q.numpy()",
    "a NumPy array": "__import__('numpy').asarray(Q)",
    "assert": "torch.isfinite(Q).all() or None",
}
STAND_INS = ("meta", "fake-cuda")


def traced(body: str, device: str) -> dict:
    source = ("import math\nimport torch\n\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
              f"    try:\n        {body}\n    except Exception:\n        pass\n"
              "    return Q @ K.transpose(-2, -1) @ V / math.sqrt(Q.size(-1)), Q @ K.transpose(-2, -1)\n")
    namespace, errors = load_student(source, None)  # the rules off: what the tracer holds alone
    assert errors == []
    Q = torch.randn(2, 3, 4)
    return graph_probes.sdpa(namespace, source.splitlines(), Q=Q, K=Q, V=Q, device=device)


@pytest.mark.parametrize("device", STAND_INS)
@pytest.mark.parametrize("body", SPELLINGS.values(), ids=SPELLINGS.keys())
def test_values_read_from_a_stand_in_leave_the_graph_however_spelled_and_caught(body, device):
    answer = traced(body, device)
    assert "error" not in answer, answer["error"]
    assert answer.get("untraceable", {}).get("line") == 7, answer.keys()


@pytest.mark.parametrize("device", STAND_INS)
def test_a_cpu_constants_value_read_on_a_stand_in_is_no_such_call(device):
    answer = traced("scale = torch.tensor(4.0).sqrt().item()", device)
    assert "error" not in answer and "untraceable" not in answer, answer.keys()
