"""Does a grading send each distinct message to the worker once, and still grade every request on its own tensors?

The worker of a graphed probe is sent decoys (the request's shapes and dtypes with other values), so two
requests that differ only in their tensors' values make the same message. The adapter keeps the worker's
answer to each message for the grading (`student_code.StudentCode._worker_answer`); these tests stand a worker
in for the sandbox (the probe run in this process on what it is sent) and count what it receives, and run the
judge's own side (grader.judge.serve.Court) in this process too, its replies encoded and decoded as the real
judge's are.
"""
import json

import pytest
import torch

from support.paths import REFERENCE
from grader.checks import decoys, student_code
from grader.exercises.attention import MODEL_ARGS
from grader.graph import answers
from grader.judge import serve
from grader.judge.process import Judge
from grader.sandbox import answers as answer_channel
from grader.sandbox import graph_probes
from grader.sandbox.confinement import Limits
from grader.sandbox.requests import MhaRequest, Probe, SdpaRequest, checked
from grader.exercises.attention import EXERCISE
from grader.handin.source import Submission

pytestmark = pytest.mark.unit


def attention(Q, K, V, is_causal=True):
    scores = Q @ K.transpose(-2, -1) / K.shape[-1] ** 0.5
    if is_causal:
        T = Q.shape[-2]
        scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def reference_namespace() -> dict:
    namespace = {"__name__": "reference"}
    exec(compile(REFERENCE.read_text(encoding="utf-8"), graph_probes.SUBMISSION_FILE, "exec"), namespace)
    return {**namespace, "scaled_dot_product_attention": attention}


class InProcessWorker:
    """Runs each probe here, as the sandbox worker would, and keeps every message it was sent."""

    alive = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []
        self.namespace = reference_namespace()

    def call(self, probe: str, fields: dict, seconds: float) -> dict:
        self.sent.append((probe, fields))
        return graph_probes.PROBES[probe](self.namespace, [], **fields)


class InProcessJudge(Judge):
    """The grading's judge with its side run here: what the parent sends it and what it reads back are the real
    judge's (only the pipe and the confinement are left out)."""

    alive = True

    def __init__(self) -> None:
        self._sent = {}
        self._missing = []  # no process, so no layer to miss
        self.limits = Limits()
        self.court = serve.Court()

    def _send(self, probe: str, fields: dict, seconds: float) -> None:
        self.replies = self.court.replies({"probe": probe, "args": fields})

    def _receive(self, seconds: float) -> dict:
        return answer_channel.decode(serve.encode(next(self.replies)))

    def close(self) -> None:
        pass


@pytest.fixture
def student(monkeypatch):
    code = student_code.StudentCode(submission=Submission("<test>", "", EXERCISE), limits=Limits())
    worker, judge = InProcessWorker(), InProcessJudge()
    monkeypatch.setattr(code, "_ensure_worker", lambda: worker)
    monkeypatch.setattr(code, "_ensure_judge", lambda: judge)
    return code, worker


def qkv(seed: int, T: int = 5):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(2, T, 4, generator=generator, dtype=torch.float64) for _ in range(3)]


def test_a_message_sent_once_is_graded_again_on_each_requests_own_tensors(student):
    code, worker = student
    first, second = qkv(1), qkv(2)
    answers = [code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True)) for q, k, v in (first, second)]
    assert len(worker.sent) == 1
    for (q, k, v), answer in zip((first, second), answers):
        assert torch.allclose(answer["out"]["value"], attention(q, k, v)[0])
        assert torch.allclose(answer["weights"]["value"], attention(q, k, v)[1])
    sent = [t for t in worker.sent[0][1].values() if isinstance(t, torch.Tensor)]
    assert not any(torch.equal(t, mine) for t in sent for mine in first + second)  # the worker saw decoys only


def test_what_the_parent_reads_from_the_graph_itself_is_not_sent(student):
    code, worker = student
    q, k, v = qkv(1)
    plain = code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True))
    counted = code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True, count_ops=True))
    assert len(worker.sent) == 1 and "ops" not in plain and counted["ops"] > 0
    assert not {"count_ops", "gradcheck"} & set(worker.sent[0][1])


@pytest.mark.parametrize("other", [dict(is_causal=False), dict(is_causal=None), dict(layout="heads"), dict(regime="training"),
                                   dict(T=6), dict(dtype=torch.float32)])
def test_a_request_that_changes_the_message_goes_to_the_worker(student, other):
    code, worker = student
    q, k, v = qkv(1)
    code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True))
    options = {key: value for key, value in other.items() if key not in ("T", "dtype")}
    q, k, v = (t.to(other.get("dtype", t.dtype)) for t in qkv(3, other.get("T", 5)))
    options.setdefault("is_causal", True)
    code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, **options))
    assert len(worker.sent) == 2


def test_a_graph_is_decoded_once_however_often_it_is_run(student, monkeypatch):
    code, worker = student
    decoded = []
    real_decode = answers.decode.decode
    monkeypatch.setattr(answers.decode, "decode", lambda *args: decoded.append(args) or real_decode(*args))
    for seed in (1, 2):
        q, k, v = qkv(seed)
        code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True, grad=True, cotangent=torch.ones_like(v),
                                          gradcheck=True, count_ops=True))
    assert len(worker.sent) == 1 and len(decoded) == 1


def test_a_decoded_graph_is_never_taken_for_an_answer_with_other_constants():
    text = torch.frombuffer(bytearray(json.dumps({"format": 1, "inputs": 1, "nodes": [
        ["input", 0], ["constant", 0, {"shape": [2], "dtype": "float32", "device": "cpu"}],
        ["call", "aten.add.Tensor", [{"n": 0}, {"n": 1}], {"kwargs": {}}], ["output", [{"n": 2}]]]}).encode()),
        dtype=torch.uint8)
    shared = {}
    with_constant = {"graph": text, "constants": [torch.ones(2)]}
    assert answers.evaluate(with_constant, [torch.zeros(2)], answers.Findings(shared))[0][0].equal(torch.ones(2))
    without = {"graph": text, "constants": []}  # the same text object, as a forged answer could send it
    outputs, _, error = answers.evaluate(without, [torch.zeros(2)], answers.Findings(shared))
    assert outputs == [] and error["type"] == "GraphRefused"


def mha_request(values: int, **call) -> MhaRequest:
    q, k, v = (torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(values + i)) for i in range(3))
    args = {**MODEL_ARGS, "dim": 16, "n_heads": 4, "max_seq_len": 8}
    return MhaRequest(args=args, is_causal=True, calls=[{"q": q, "k": k, "v": v, **call}])


def test_a_module_call_is_sent_again_when_its_mode_changes_and_never_for_the_parents_seed_alone(student):
    """A call's seed is the parent's own (drawn from the grading's secret for the graph's dropout): the worker gets the
    call's place instead, so another seed alone makes no other message."""
    code, worker = student
    answers_ = [code.call(Probe.MHA, mha_request(values, mode="eval", seed=5)) for values in (1, 2)]
    assert len(worker.sent) == 1
    assert not torch.equal(answers_[0]["calls"][0]["out"]["value"], answers_[1]["calls"][0]["out"]["value"])
    code.call(Probe.MHA, mha_request(1, mode="eval", seed=6))
    assert len(worker.sent) == 1
    code.call(Probe.MHA, mha_request(1, mode="train", seed=5))
    assert len(worker.sent) == 2


def test_a_batch_of_runs_answers_each_request_on_its_own_tensors_in_its_own_place(student):
    """One exchange with the judge for several requests (StudentCode.call_many): the n-th answer is the n-th
    request's, never a neighbour's, though every graph is the same trace."""
    code, worker = student
    inputs = [qkv(seed) for seed in (1, 2, 3)]
    batched = code.call_many(Probe.SDPA, [SdpaRequest(Q=q, K=k, V=v, is_causal=True) for q, k, v in inputs])
    assert len(worker.sent) == 1 and len(batched) == 3
    for (q, k, v), answer in zip(inputs, batched):
        assert torch.allclose(answer["out"]["value"], attention(q, k, v)[0])
        assert torch.allclose(answer["weights"]["value"], attention(q, k, v)[1])


def test_a_run_that_fails_ends_the_judges_replies_to_its_batch():
    """The judge sends no reply after a failed run, so the parent, which stops reading there, never takes a
    later run's reply for another request's."""
    court = serve.Court()
    q, k, v = qkv(1)
    traced = graph_probes.sdpa(reference_namespace(), [], Q=q, K=k, V=v, is_causal=True)
    fields = checked(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True))
    runs = [{"traced": traced, "answer_id": 0, "fields": fields}, {"answer_id": 7, "fields": fields},
            {"answer_id": 0, "fields": fields}]
    replies = list(court.replies({"probe": "sdpa", "args": {"runs": runs}}))
    assert [("answer" in reply, "internal" in reply) for reply in replies] == [(True, False), (False, True)]


def drawn_one_by_one(fields: dict) -> list[torch.Tensor]:
    """The decoys as first written: each tensor, depth first, drawn in float64 from one generator seeded 0x5EED and
    cast to its dtype."""
    generator, out = torch.Generator().manual_seed(0x5EED), []

    def walk(value):
        if isinstance(value, torch.Tensor):
            out.append(torch.randn(value.shape, generator=generator, dtype=torch.float64).to(value.dtype))
        for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
            walk(item)

    walk(fields)
    return out


def tensors_of(fields: dict) -> list[torch.Tensor]:
    found = []
    for value in fields.values() if isinstance(fields, dict) else fields:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (dict, list)):
            found += tensors_of(value)
    return found


def test_a_message_that_differs_in_other_fields_only_gets_the_same_decoys_drawn_once(student, monkeypatch):
    """Two messages with the same shapes and dtypes in the same order (here is_causal differs): the second gets the
    first's decoys without a draw, and both are the values drawn one by one, so the worker is sent the same bytes."""
    code, worker = student
    q, k, v = qkv(1)
    code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True))
    draws = []
    real_randn = torch.randn
    monkeypatch.setattr(torch, "randn", lambda *args, **options: draws.append(args) or real_randn(*args, **options))
    code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=False))
    monkeypatch.setattr(torch, "randn", real_randn)
    assert len(worker.sent) == 2 and draws == []
    for _, fields in worker.sent:
        expected = drawn_one_by_one({key: (q if key in "QKV" else value) for key, value in fields.items()})
        assert all(torch.equal(sent, drawn) for sent, drawn in zip(tensors_of(fields), expected, strict=True))


def test_the_same_tensor_twice_in_one_message_gets_two_decoys():
    q, k, v = qkv(1)
    message = {"calls": [{"q": q, "k": k, "v": v}, {"q": q, "k": k, "v": v}], "weights": {"wq": torch.ones(4, 4)}}
    drawn = {}
    sent = decoys.decoys(message, drawn)
    assert all(torch.equal(a, b) for a, b in zip(tensors_of(sent), drawn_one_by_one(message), strict=True))
    assert not torch.equal(sent["calls"][0]["q"], sent["calls"][1]["q"])
    assert tensors_of(decoys.decoys(message, drawn))[0] is tensors_of(sent)[0]  # one grading: reused


def test_a_second_grading_draws_its_own_decoys(monkeypatch):
    """The record of decoys is one grading's: another grading (another StudentCode) of the same request draws again."""
    gradings = []
    for _ in range(2):
        code = student_code.StudentCode(submission=Submission("<test>", "", EXERCISE), limits=Limits())
        worker, judge = InProcessWorker(), InProcessJudge()
        monkeypatch.setattr(code, "_ensure_worker", lambda worker=worker: worker)
        monkeypatch.setattr(code, "_ensure_judge", lambda judge=judge: judge)
        q, k, v = qkv(1)
        code.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=True))
        gradings.append(tensors_of(worker.sent[0][1]))
    first, second = gradings
    assert all(torch.equal(a, b) and a is not b for a, b in zip(first, second, strict=True))
