"""Does the judge answer a run it already made without making it again, and only a run it really already made?

Checks of one grading ask for a few runs twice (the same worker answer on the same fields). The judge keeps each
reply by the answer and a fingerprint of the fields; a run that differs in anything the graph could read (a value,
a dtype, a stride, a flag, the answer) is made afresh.
"""
import pytest
import torch

from grader.graph import run
from grader.judge import serve
from grader.sandbox import graph_probes
from grader.sandbox.requests import Probe, SdpaRequest, checked

pytestmark = pytest.mark.unit


def attention(Q, K, V, is_causal=True):
    scores = Q @ K.transpose(-2, -1) / K.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ V, torch.softmax(scores, dim=-1)


def qkv(seed: int):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 5, 4, generator=generator, dtype=torch.float64) for _ in range(3)]


@pytest.fixture
def runs_made(monkeypatch) -> list:
    made, run_for_real = [], run.run
    monkeypatch.setattr(run, "run", lambda *args, **kwargs: made.append(1) or run_for_real(*args, **kwargs))
    return made


def test_a_run_asked_again_is_answered_as_before_without_running_its_graph_again(runs_made):
    q, k, v = qkv(1)
    traced = graph_probes.sdpa({"scaled_dot_product_attention": attention}, [], Q=q, K=k, V=v)
    fields = checked(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v))
    court = serve.Court()
    first = court.reply("sdpa", {"traced": traced, "answer_id": 0, "fields": fields})
    again = court.reply("sdpa", {"answer_id": 0, "fields": checked(Probe.SDPA, SdpaRequest(Q=q.clone(), K=k, V=v))})
    assert len(runs_made) == 1
    assert torch.equal(again["answer"]["out"]["value"], first["answer"]["out"]["value"])


def test_a_run_on_other_values_or_of_another_answer_is_made_afresh(runs_made):
    q, k, v = qkv(1)
    other_q = q.clone()
    other_q[1, 4, 3] += 1e-9  # one element, by less than any tolerance
    namespace = {"scaled_dot_product_attention": attention}
    traced = graph_probes.sdpa(namespace, [], Q=q, K=k, V=v)
    court = serve.Court()
    court.reply("sdpa", {"traced": traced, "answer_id": 0, "fields": checked(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v))})
    moved = court.reply("sdpa", {"answer_id": 0, "fields": checked(Probe.SDPA, SdpaRequest(Q=other_q, K=k, V=v))})
    assert torch.equal(moved["answer"]["out"]["value"], attention(other_q, k, v)[0])
    court.reply("sdpa", {"traced": dict(traced), "answer_id": 1,
                         "fields": checked(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v))})
    assert len(runs_made) == 3


def fields_with(**values) -> dict:
    base = {"Q": torch.arange(6.0).reshape(2, 3), "grad": False, "seed": 1, "calls": [{"q": torch.zeros(2)}]}
    return {**base, **values}


def test_fields_that_are_the_same_have_one_fingerprint():
    copy = fields_with(Q=torch.arange(6.0).reshape(2, 3).clone(), calls=[{"q": torch.zeros(2).clone()}])
    assert serve.fingerprint(copy) == serve.fingerprint(fields_with())


@pytest.mark.parametrize("other", [
    {"Q": torch.arange(6.0).reshape(3, 2).t().contiguous().reshape(2, 3)},
    {"Q": torch.empty(3, 2).t().copy_(torch.arange(6.0).reshape(2, 3))},  # the same values in another order
    {"Q": torch.arange(6.0, dtype=torch.float64).reshape(2, 3)},
    {"Q": torch.arange(6.0).reshape(3, 2)},
    {"Q": torch.cat([torch.zeros(2), torch.arange(6.0)])[2:].reshape(2, 3)},  # the same values, another offset
    {"grad": 0}, {"seed": 1.0}, {"seed": True},
    {"calls": [{"q": torch.zeros(2)}, {"q": torch.zeros(2)}]},
    {"calls": [{"k": torch.zeros(2)}]},
], ids=["values", "strides", "dtype", "shape", "offset", "bool-as-int", "int-as-float", "int-as-bool",
        "a call more", "a key renamed"])
def test_fields_that_differ_in_anything_a_graph_reads_have_other_fingerprints(other):
    assert serve.fingerprint(fields_with(**other)) != serve.fingerprint(fields_with())


def test_fields_holding_a_kind_the_fingerprint_does_not_read_are_run_each_time():
    assert serve.fingerprint(fields_with(Q=torch.nn.Parameter(torch.zeros(2)))) is None
    assert serve.fingerprint(fields_with(seed=object())) is None
