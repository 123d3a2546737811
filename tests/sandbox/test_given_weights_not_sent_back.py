"""Does a module's answer leave out the weights the request gives, and is the part graded as before without them?

The judge runs a module's graph with the parent's own weights wherever the request gives them
(grader.graph.answers._state), so the worker's values there were never read: they are not sent back (most of an
answer's bytes). Whatever an answer holds in their place changes nothing.
"""
import pytest
import torch

from support.paths import REFERENCE
from grader.exercises.attention import MODEL_ARGS, PROJECTIONS
from grader.checks.student_code import message_fields
from grader.judge import serve
from grader.sandbox import graph_probes
from grader.sandbox.requests import MhaRequest, Probe, checked

pytestmark = pytest.mark.unit


def reference_namespace() -> dict:
    namespace = {"__name__": "reference"}
    exec(compile(REFERENCE.read_text(encoding="utf-8"), graph_probes.SUBMISSION_FILE, "exec"), namespace)
    return namespace


def request(with_weights: bool) -> dict:
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 5, 16, generator=generator) for _ in range(3))
    weights = {name: torch.randn(16, 16, generator=generator) / 4 for name in PROJECTIONS} if with_weights else None
    args = {**MODEL_ARGS, "dim": 16, "n_heads": 4, "max_seq_len": 8}
    return checked(Probe.MHA, MhaRequest(args=args, is_causal=True, calls=[{"q": q, "k": k, "v": v}], weights=weights))


def worker_answer(fields: dict) -> dict:
    """The worker's probe on what the worker is sent (the judge's fields less what only the parent reads)."""
    return graph_probes.mha(reference_namespace(), [], **message_fields(Probe.MHA, fields))


def sent(answer: dict) -> dict:
    return dict(zip(answer["state"]["names"], answer["state"]["values"]))


def test_the_weights_a_request_gives_are_not_sent_back_and_the_rest_of_the_state_is():
    given = sent(worker_answer(request(with_weights=True)))
    assert {f"{name}.weight" for name in PROJECTIONS} <= set(given)
    assert all(given[f"{name}.weight"].numel() == 0 for name in PROJECTIONS)
    assert any(value.numel() > 0 for name, value in given.items() if name not in {f"{p}.weight" for p in PROJECTIONS})
    built = sent(worker_answer(request(with_weights=False)))
    assert all(built[f"{name}.weight"].shape == (16, 16) for name in PROJECTIONS)  # the module's own: sent


@pytest.mark.parametrize("in_their_place", ["nothing", "the weights", "other values"])
def test_the_judge_grades_the_call_alike_whatever_stands_in_the_given_weights_place(in_their_place):
    fields = request(with_weights=True)
    traced = worker_answer(fields)
    expected = serve.Court().reply("mha", {"traced": traced, "answer_id": 0, "fields": fields})["answer"]
    state = traced["state"]
    filler = {"nothing": lambda name: torch.empty(0), "the weights": lambda name: fields["weights"][name[:2]],
              "other values": lambda name: torch.randn(16, 16)}[in_their_place]
    state["values"] = [filler(name) if name.endswith(".weight") and name[:2] in PROJECTIONS else value
                       for name, value in zip(state["names"], state["values"])]
    answer = serve.Court().reply("mha", {"traced": traced, "answer_id": 0, "fields": fields})["answer"]
    assert torch.equal(answer["calls"][0]["out"]["value"], expected["calls"][0]["out"]["value"])
    assert "error" not in answer["calls"][0]
