"""Does the static pass name the mistake a snippet shows, at its line, and stay silent on its honest twin?

grader.static_pass on source text: no sandbox.
"""
import pytest

from grader.exercises import attention
from grader.static_pass import analyse

pytestmark = pytest.mark.unit

SDPA = attention.PART["sdpa"].graded_name
MHA = attention.PART["mha"].graded_name


def sdpa(body: str, signature: str = "Q, K, V, is_causal=True") -> str:
    return f"import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\ndef {SDPA}({signature}):\n    {body}\n"


def mha(init: str) -> str:
    return (f"import torch\nimport torch.nn as nn\n\nclass {MHA}(nn.Module):\n    def __init__(self, args):\n"
            f"        super().__init__()\n        {init}\n")


# (mistake, the snippet that shows it, its honest twin)
CASES = [
    ("bare-matmul", sdpa("return matmul(Q, K)"), sdpa("return torch.matmul(Q, K)")),
    ("misspelled-tensor", sdpa("return Q", "Q: torch.Tenser, K, V, is_causal=True"),
     sdpa("return Q", "Q: torch.Tensor, K, V, is_causal=True")),
    ("dropout-lowercase", mha("self.drop = nn.dropout(0.1)"), mha("self.drop = nn.Dropout(0.1)")),
    ("is-causal-typo", sdpa("return Q", "Q, K, V, is_casual=True"), sdpa("return Q")),
    ("forbidden-api", sdpa("return F.scaled_dot_product_attention(Q, K, V)"), sdpa("return torch.softmax(Q, -1)")),
    ("mask-device", sdpa("return torch.ones(3, 3)"), sdpa("return torch.ones(3, 3, device=Q.device)")),
    ("hardcoded-device", sdpa("return Q.to('cuda')"), sdpa("return Q.to(K.device)")),
    ("python-loop", sdpa("return [q for q in Q]"), sdpa("return Q.unbind(0)")),
    ("mask-not-buffer", mha("self.mask = torch.tril(torch.ones(4, 4))"),
     mha("self.register_buffer('mask', torch.tril(torch.ones(4, 4)))")),
    ("mask-nan", sdpa("return Q + torch.ones(3, 3).triu(1) * float('-inf')"),
     sdpa("return Q.masked_fill(torch.ones(3, 3).triu(1).bool(), float('-inf'))")),
    ("mask-nan", sdpa("return Q + (1 - K) * -math.inf"), sdpa("return Q + (1 - K) * -1e9")),
    ("mask-missing", sdpa("return Q.masked_fill(K, -1e-9)"), sdpa("return Q.masked_fill(K, -1e9)")),
    ("mask-missing", sdpa("return torch.where(K, Q, -1e-10)"), sdpa("return torch.where(K, Q, -1e10)")),
]


@pytest.mark.parametrize("mistake, shown, honest", CASES, ids=[c[0] for c in CASES])
def test_a_snippet_shows_its_mistake_at_its_line_and_its_twin_does_not(mistake, shown, honest):
    places = analyse(shown).get(mistake)
    assert places, f"{mistake} not found in:\n{shown}"
    lines = shown.splitlines()
    assert all(lines[p["line"] - 1].strip() == p["text"] for p in places)
    assert mistake not in analyse(honest), f"{mistake} found in the honest twin:\n{honest}"


def test_device_and_loop_findings_count_only_inside_the_graded_code():
    """A loop or a device string in the student's own experiments is not a finding about the graded code."""
    outside = sdpa("return Q") + "\nfor i in range(3):\n    x = torch.ones(2).to('cuda')\n"
    found = analyse(outside)
    assert not {"python-loop", "hardcoded-device", "mask-device"} & set(found), found


def test_text_that_does_not_parse_has_no_findings():
    assert analyse(sdpa("return matmul(Q, K")) == {}
