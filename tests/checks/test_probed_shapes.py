"""Does `sdpa.shapes` still try every shape README promises: `(T, d)`, `(B, T, d)`, `(B, H, T, d)`,
`(A, B, H, T, d)`, `d_k ≠ d_v` and `T = 1` (*Points policy*, Every promised shape)?

The promise is written here as literals and held against the inputs the check actually sends (a stand-in student
records them), so a probe shape removed from the code, while README still promises it, fails here.
"""
from __future__ import annotations

import pytest

from grader.checks import Context
from grader.checks.sdpa.behaviour import shapes
from grader.sandbox.requests import Probe

pytestmark = pytest.mark.unit

PROMISED_RANKS = {2: "(T, d)", 3: "(B, T, d)", 4: "(B, H, T, d)", 5: "(A, B, H, T, d)"}


class RecordingStudent:
    """Answers every probe with outputs of the right shapes (zeros) and keeps the inputs it was sent."""

    def __init__(self) -> None:
        self.inputs: list[tuple[tuple, tuple, tuple]] = []

    def call(self, probe: Probe, request) -> dict:
        import torch

        assert probe is Probe.SDPA, probe
        Q, K, V = request.Q, request.K, request.V
        self.inputs.append((tuple(Q.shape), tuple(K.shape), tuple(V.shape)))
        out, weights = torch.zeros(*Q.shape[:-1], V.shape[-1]), torch.zeros(*Q.shape[:-1], K.shape[-2])
        return {"structure": {"kind": "tuple", "length": 2},
                "out": {"kind": "tensor", "shape": list(out.shape), "value": out},
                "weights": {"kind": "tensor", "shape": list(weights.shape), "value": weights}}


@pytest.fixture(scope="module")
def sent() -> list[tuple[tuple, tuple, tuple]]:
    student = RecordingStudent()
    outcome = shapes(Context(student=student, static={}, cuda=False))
    assert outcome.passed, outcome.en
    return student.inputs


@pytest.mark.parametrize("rank", PROMISED_RANKS, ids=PROMISED_RANKS.get)
def test_every_promised_rank_is_probed(sent, rank):
    ranks = sorted({len(Q) for Q, _, _ in sent})
    assert rank in ranks, f"no probe of {PROMISED_RANKS[rank]}: ranks probed {ranks}"


def test_a_single_position_is_probed(sent):
    assert any(Q[-2] == 1 for Q, _, _ in sent)


def test_values_of_another_width_than_the_keys_are_probed(sent):
    assert any(V[-1] != K[-1] for _, K, V in sent)
