"""Does the static pass name Part 1 code written for one input rank, and `torch.sqrt` on an int,
without ever flagging correct code? And does diagnosis recognise the errors such code raises?"""
import textwrap
from pathlib import Path

import pytest

from support.measures import CpuTime

from support.paths import REFERENCE, SUBMISSIONS
from grader import static_pass
from grader.checks import diagnosis

pytestmark = pytest.mark.unit

NEW_IDS = ("hardcoded-dims", "sqrt-of-int")


def sdpa(body: str, signature: str = "Q, K, V, is_causal: bool = True") -> str:
    """A Part 1 function around `body` (the provided imports and a correct module beside it)."""
    return ("import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
            f"def scaled_dot_product_attention({signature}):\n" + textwrap.indent(textwrap.dedent(body), "    "))


def flagged(source: str, mistake: str = "hardcoded-dims") -> list[str]:
    return [place["text"] for place in static_pass.analyse(source).get(mistake, [])]


@pytest.mark.parametrize("line", [
    "scores = Q @ K.transpose(0, 1) / math.sqrt(Q.size(-1))",
    "scores = Q @ K.transpose(1, 2) / math.sqrt(Q.size(-1))",
    "scores = Q @ torch.transpose(K, 1, 2) / 8",
    "scores = Q @ K.permute(0, 2, 1) / 8",
    "scores = torch.bmm(Q, K.mT) / 8",
    "d_k = Q.size(2)",
    "d_k = Q.shape[1]",
    "B, T, d_k = Q.shape",
    "B, T, d_k = Q.size()",
    "w = F.softmax(Q @ K.mT, dim=1)",
    "w = torch.softmax(Q @ K.mT, 2)",
    "w = (Q @ K.mT).softmax(dim=3)",
    "w = nn.Softmax(dim=2)(Q @ K.mT)",
    'scores = torch.einsum("bnd,bmd->bnm", Q, K)',
    'scores = torch.einsum("b...nd,b...md->b...nm", Q, K)',
    "mask = torch.ones(1, Q.size(-2), Q.size(-2)).tril()",
    "mask = torch.full((1, 1, 5, 5), float('-inf')).triu(1)",
    "mask = torch.ones(5, 5).tril().unsqueeze(0)",
    "mask = torch.ones(5, 5).tril().view(1, 5, 5)",
])
def test_rank_assumptions_in_part_1_are_flagged(line):
    assert flagged(sdpa(f"{line}\nreturn Q, K\n")) == [line]


def test_a_tensor_derived_from_the_input_keeps_its_rank():
    source = sdpa("""
        scores = torch.matmul(Q, K.transpose(-2, -1)) / 8
        scores = scores.masked_fill(mask, 0.0)
        weights = scores.softmax(dim=1)
        return weights @ V, weights
        """)
    assert flagged(source) == ["weights = scores.softmax(dim=1)"]


@pytest.mark.parametrize("body", [
    # dims from the back, any number of leading dims
    """
    T, d_k = Q.size(-2), Q.size(-1)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    weights = F.softmax(scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf")), dim=-1)
    return weights @ V, weights
    """,
    # flatten the leading dims, then 3-D code (bmm, transpose(1, 2), a mask given its batch dim) is right
    """
    *lead, T, d_k = Q.shape
    q, k, v = Q.reshape(-1, T, d_k), K.reshape(-1, T, d_k), V.reshape(-1, T, V.shape[-1])
    scores = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d_k)
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1).unsqueeze(0), float("-inf"))
    w = F.softmax(scores, dim=2)
    return torch.bmm(w, v).reshape(*lead, T, -1), w.reshape(*lead, T, T)
    """,
    # einsum and einops with an ellipsis; a mask shaped like the scores
    """
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / Q.shape[-1] ** 0.5
    future = torch.ones_like(scores, dtype=torch.bool).triu(1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), -1)
    return torch.einsum("...qk,...kd->...qd", weights, V), weights
    """,
    # unsqueeze(0) adds the front of any rank; a shape slice
    """
    T = Q.shape[-2]
    lead = Q.shape[:-2]
    return Q.unsqueeze(0).squeeze(0), lead
    """,
])
def test_correct_part_1_code_is_not_flagged(body):
    assert flagged(sdpa(body)) == []


def test_part_2_unpacks_its_fixed_rank_freely():
    source = sdpa("return Q, K\n") + textwrap.dedent("""
        class MultiHeadAttention(nn.Module):
            def forward(self, q, k, v):
                B, T, C = q.size()
                q = q.view(B, T, 4, C // 4).transpose(1, 2)
                return F.softmax(q @ q.transpose(2, 3), dim=3)
        """)
    assert flagged(source) == []


CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py")) + [REFERENCE]


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_no_new_finding_on_correct_code(path: Path):
    found = static_pass.analyse(path.read_text(encoding="utf-8"))
    assert not set(NEW_IDS) & set(found), found


@pytest.mark.parametrize("line", [
    "scale = torch.sqrt(d_k)",
    "scale = torch.rsqrt(Q.size(-1))",
    "scale = torch.sqrt(Q.shape[-1])",
    "scale = torch.sqrt(float(d_k))",
    "scale = torch.sqrt(T * d_k)",
    "scale = torch.sqrt(n)",
])
def test_sqrt_of_a_python_number_is_flagged(line):
    source = sdpa(f"T, d_k = Q.size(-2), Q.size(-1)\nB, n, d = Q.shape\n{line}\nreturn Q, K\n")
    assert flagged(source, "sqrt-of-int") == [line]


def test_sqrt_of_a_module_size_is_flagged():
    source = sdpa("return Q, K\n") + textwrap.dedent("""
        class MultiHeadAttention(nn.Module):
            def __init__(self, args):
                self.head_dim = args.dim // args.n_heads
            def forward(self, q, k, v):
                return q / torch.sqrt(self.head_dim) + q / torch.sqrt(args.dim)
        """)
    assert len(flagged(source, "sqrt-of-int")) == 1


@pytest.mark.parametrize("line", [
    "scale = torch.sqrt(torch.tensor(d_k))",
    "scale = torch.sqrt(Q.new_tensor(d_k))",
    "scale = math.sqrt(d_k)",
    "scale = torch.sqrt(scores)",
    "scale = torch.sqrt(x)",  # x is bound to a tensor once: not only a number
])
def test_sqrt_of_a_tensor_is_not_flagged(line):
    source = sdpa(f"d_k = Q.size(-1)\nscores = Q @ K.mT\nx = 3\nx = Q.sum()\n{line}\nreturn Q, K\n")
    assert flagged(source, "sqrt-of-int") == []


STATIC = {"hardcoded-dims": [{"line": 7, "text": "B, T, d_k = Q.shape"}]}


@pytest.mark.parametrize("kind, message", [
    ("TypeError", "sqrt(): argument 'input' (position 1) must be Tensor, not int"),
    ("TypeError", "rsqrt(): argument 'input' (position 1) must be Tensor, not float"),
])
def test_sqrt_of_int_error_is_named_without_evidence(kind, message):
    assert diagnosis.from_error({"type": kind, "message": message}, {}) == ["sqrt-of-int"]


@pytest.mark.parametrize("kind, message", [
    ("ValueError", "too many values to unpack (expected 3)"),
    ("ValueError", "not enough values to unpack (expected 3, got 2)"),
    ("IndexError", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    ("RuntimeError", "batch1 must be a 3D tensor"),
    ("RuntimeError", "einsum(): the number of subscripts in the equation (3) does not match the number of dimensions "
                     "(2) for operand 0 and no ellipsis was given"),
    ("IndexError", "tuple index out of range"),
])
def test_rank_errors_are_hardcoded_dims_with_static_evidence(kind, message):
    on_the_line = {"type": kind, "message": message, "where": {"line": 7, "function": "helper"}}
    in_part_1 = {"type": kind, "message": message, "where": {"line": 9, "function": "scaled_dot_product_attention"}}
    elsewhere = {"type": kind, "message": message, "where": {"line": 40, "function": "forward"}}
    assert diagnosis.from_error(on_the_line, STATIC) == ["hardcoded-dims"]
    assert diagnosis.from_error(in_part_1, STATIC) == ["hardcoded-dims"]
    assert diagnosis.from_error(elsewhere, STATIC) == []  # Part 2's own shape bug is not this one
    assert diagnosis.from_error(on_the_line, {}) == []  # no line assumes a rank: nothing to name


def test_unrelated_errors_are_not_hardcoded_dims():
    error = {"type": "RuntimeError", "message": "expected scalar type Float but found Half"}
    assert diagnosis.from_error(error, STATIC) == []
    sliced = {"type": "RuntimeError", "message": "The size of tensor a (5) must match the size of tensor b (16) at "
                                                 "non-singleton dimension 3"}
    assert diagnosis.from_error(sliced, STATIC, max_seq_len=16) == ["mask-not-sliced"]


def test_hostile_nesting_costs_neither_the_stack_nor_the_clock():
    """A 1000-term expression (beyond the recursion limit when followed naively) and names that double
    at every step are typed in bounded time."""
    deep = "+".join(["Q"] * 1000)
    doubling = "\n".join(f"x{i + 1} = x{i} + x{i}" for i in range(40))
    source = sdpa(f"x0 = Q.size(-1)\n{doubling}\ns = torch.sqrt(x40)\ny = torch.sqrt({deep})\n"
                  f"w = F.softmax({deep}, dim=1)\nreturn y, w\n")
    with CpuTime() as spent:
        found = static_pass.analyse(source)
    assert spent.seconds < 20
    assert [p["text"] for p in found["sqrt-of-int"]] == ["s = torch.sqrt(x40)"]
