"""Typed probe requests: is a check's mistake reported as the grader's, and never as the student's?

The first tests build requests only (no sandbox). The others grade the reference solution with one
check that makes a wrong request, and a submission that forges the worker's "bad request" answer.
"""
import dataclasses

import pytest
import torch

from support.paths import REFERENCE
from grader.checks.student_code import message_fields
from grader.exercises.attention import DROPOUTS, MODEL_ARGS, PART, PROJECTIONS
from grader.checks import Check, Outcome
from grader.errors import GraderError
from grader.grade import grade_submission
from grader.sandbox import graph_probes, probes, requests
from grader.sandbox.requests import (BadRequest, CacheRequest, DecodeRequest, FunctionRequest, GqaRequest,
                                     MhaInterfaceRequest, MhaRequest, Probe, SdpaRequest, checked,
                                     gqa_weight_shapes)

pytestmark = pytest.mark.unit

INTERNAL_ERROR = ("Internal grader error", "评分程序内部错误")


def qkv(T=5, d_k=8, d_v=8, dtype=torch.float32):
    return dict(Q=torch.randn(2, 3, T, d_k, dtype=dtype), K=torch.randn(2, 3, T, d_k, dtype=dtype),
                V=torch.randn(2, 3, T, d_v, dtype=dtype))


def model_args(**changes):
    return {**MODEL_ARGS, "dim": 32, "max_seq_len": 16, **changes}


def mha_call(B=2, T=5, dim=32, **extra):
    return {"q": torch.randn(B, T, dim), "k": torch.randn(B, T, dim), "v": torch.randn(B, T, dim), **extra}


def decode(steps=([0, 0, 4], [0, 4, 1]), B=2, **changes):
    """A DecodeRequest of the kv_cache lab: dim 12 in 6 query heads over 2 key/value heads, head width 2."""
    args = {"dim": 12, "n_heads": 6, "n_kv_heads": 2, "max_seq_len": 8, "max_batch_size": 3}
    weights = {"wq": torch.randn(12, 12), "wk": torch.randn(4, 12), "wv": torch.randn(4, 12), "wo": torch.randn(12, 12)}
    fields = {"args": args, "steps": [list(step) for step in steps],
              "xs": [torch.randn(B, step[2], 12) for step in steps], "weights": weights}
    return DecodeRequest(**{**fields, **changes})


def cache_step(start_pos, T, B=2, dtype=torch.float32):
    return {"start_pos": start_pos, "k": torch.randn(B, 2, T, 4, dtype=dtype), "v": torch.randn(B, 2, T, 4, dtype=dtype)}


def cache_request(**changes):
    return CacheRequest(**{"max_batch_size": 3, "max_seq_len": 8, "n_kv_heads": 2, "head_dim": 4,
                           "steps": [cache_step(0, 5)], **changes})


GQA_ARGS = dict(dim=32, n_heads=4, n_kv_heads=2, max_seq_len=16, max_batch_size=2)
# Every option a check uses today, once: each request must build and bind to its probe's parameters.
HONEST = {
    Probe.SDPA: [SdpaRequest(**qkv()), SdpaRequest(**qkv(), is_causal=False, device="meta", count_ops=True),
                 SdpaRequest(**qkv(d_v=10), is_causal=True, grad=True, cotangent=torch.randn(2, 3, 5, 10),
                             gradcheck=True, layout="heads"),
                 SdpaRequest(**qkv(), layout="columns", regime="inference")],
    Probe.MHA: [MhaRequest(args=model_args(), calls=[mha_call(), mha_call(mode="train", seed=3, regime="training")], is_causal=True,
                           weights={name: torch.randn(32, 32) for name in PROJECTIONS}, roundtrip=True, count_ops=True,
                           dropout_p={name: 0.5 for name in DROPOUTS}),
                MhaRequest(args=model_args(dim=12, n_heads=3), calls=[mha_call(dim=12)], dtype="float64", grad=True,
                           cotangent=torch.randn(2, 5, 12), device="meta", seed=1)],
    Probe.MHA_INTERFACE: [MhaInterfaceRequest(args=model_args(dropout=0.1), is_causal=False)],
    Probe.REPEAT: [FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8), 3]),
                   FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8), 1], device="fake-cuda",
                                   count_ops=True, layout="heads", regime="training"),
                   FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8, dtype=torch.float64), 2], grad=True,
                                   cotangent=torch.randn(2, 4, 5, 8, dtype=torch.float64))],
    Probe.DECODE: [decode(), decode(steps=([0, 0, 3], [1, 0, 2], [0, 3, 1], [1, 2, 3]), B=3),
                   decode(steps=([0, 0, 4], [0, 4, 1], [0, 3, 1]))],  # a position decoded again
    Probe.CACHE: [CacheRequest(max_batch_size=3, max_seq_len=8, n_kv_heads=2, head_dim=4, steps=[cache_step(0, 5)]),
                  CacheRequest(max_batch_size=3, max_seq_len=8, n_kv_heads=2, head_dim=4, dtype="float64",
                               steps=[cache_step(0, 5, B=3, dtype=torch.float64), cache_step(5, 1, B=3, dtype=torch.float64)],
                               device="meta", count_ops=True)],
    Probe.GQA: [GqaRequest(args=GQA_ARGS, x=torch.randn(2, 5, 32), weights={name: torch.randn(shape) for name, shape in
                                                                             gqa_weight_shapes(GQA_ARGS).items()},
                           seed=2, device="meta", count_ops=True, regime="inference"),
                GqaRequest(args=GQA_ARGS, x=torch.randn(1, 3, 32), grad=True, cotangent=torch.randn(1, 3, 32))],
}


@pytest.mark.parametrize("probe", list(Probe))
def test_every_request_a_check_can_build_is_one_its_probe_takes(probe):
    for request in HONEST[probe]:
        assert graph_probes.request_problem(probe.value, message_fields(probe, checked(probe, request))) is None


def test_the_probes_model_args_copy_is_the_declared_one():
    assert dataclasses.asdict(probes.ModelArgs()) == MODEL_ARGS


BAD = {
    "unknown field": lambda: SdpaRequest(**qkv(), is_casual=True),
    "missing field": lambda: SdpaRequest(Q=torch.randn(2, 4, 8), K=torch.randn(2, 4, 8)),
    "positional fields": lambda: SdpaRequest(*qkv().values()),
    "is_causal not a bool": lambda: SdpaRequest(**qkv(), is_causal=1),
    "unknown device": lambda: SdpaRequest(**qkv(), device="gpu"),
    "flag not a bool": lambda: SdpaRequest(**qkv(), count_ops="yes"),
    "integer inputs": lambda: SdpaRequest(Q=torch.ones(2, 4, 8, dtype=torch.long), K=torch.ones(2, 4, 8, dtype=torch.long),
                                          V=torch.ones(2, 4, 8, dtype=torch.long)),
    "mixed dtypes": lambda: SdpaRequest(**{**qkv(), "V": torch.randn(2, 3, 5, 8, dtype=torch.float64)}),
    "d_k differs": lambda: SdpaRequest(**{**qkv(), "K": torch.randn(2, 3, 5, 6)}),
    "batch differs": lambda: SdpaRequest(**{**qkv(), "V": torch.randn(3, 3, 5, 8)}),
    "grad without cotangent": lambda: SdpaRequest(**qkv(), grad=True),
    "cotangent of the wrong shape": lambda: SdpaRequest(**qkv(), grad=True, cotangent=torch.randn(2, 3, 5, 5)),
    "cotangent without grad": lambda: SdpaRequest(**qkv(), cotangent=torch.randn(2, 3, 5, 8)),
    "layout unknown": lambda: SdpaRequest(**qkv(), layout="transposed"),
    "regime unknown": lambda: SdpaRequest(**qkv(), regime="eval"),
    "gradients in inference": lambda: SdpaRequest(**qkv(), grad=True, cotangent=torch.randn(2, 3, 5, 8), regime="inference"),
    "args field missing": lambda: MhaInterfaceRequest(args={"dim": 32, "n_heads": 4, "dropout": 0.0}),
    "args field renamed": lambda: MhaInterfaceRequest(args={"dim": 32, "n_head": 4, "dropout": 0.0, "max_seq_len": 16}),
    "args int as float": lambda: MhaInterfaceRequest(args=model_args(dim=32.0)),
    "args bool as int": lambda: MhaInterfaceRequest(args=model_args(n_heads=True)),
    "args dropout out of range": lambda: MhaInterfaceRequest(args=model_args(dropout=1.5)),
    "no calls": lambda: MhaRequest(args=model_args(), calls=[]),
    "call key misspelt": lambda: MhaRequest(args=model_args(), calls=[{**mha_call(), "mdoe": "train"}]),
    "call mode unknown": lambda: MhaRequest(args=model_args(), calls=[mha_call(mode="training")]),
    "call regime unknown": lambda: MhaRequest(args=model_args(), calls=[mha_call(regime="train")]),
    "call width is not dim": lambda: MhaRequest(args=model_args(), calls=[mha_call(dim=16)]),
    "call k and v lengths differ": lambda: MhaRequest(args=model_args(), calls=[{**mha_call(), "v": torch.randn(2, 4, 32)}]),
    "weight name unknown": lambda: MhaRequest(args=model_args(), calls=[mha_call()], weights={"w_q": torch.randn(32, 32)}),
    "weight shape wrong": lambda: MhaRequest(args=model_args(), calls=[mha_call()], weights={"wq": torch.randn(32, 16)}),
    "dtype unknown": lambda: MhaRequest(args=model_args(), calls=[mha_call()], dtype="half"),
    "seed not an int": lambda: MhaRequest(args=model_args(), calls=[mha_call()], seed=1.0),
    "dropout layer unknown": lambda: MhaRequest(args=model_args(), calls=[mha_call()], dropout_p={"dropout": 0.5}),
    "function of an undeclared part": lambda: FunctionRequest(part="repeat_kv", arguments=[torch.randn(2, 2, 5, 8), 2]),
    "function arguments as a tuple": lambda: FunctionRequest(part="repeat", arguments=(torch.randn(2, 2, 5, 8), 2)),
    "function argument a bool": lambda: FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8), True]),
    "function argument a float": lambda: FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8), 2.0]),
    "function without a tensor": lambda: FunctionRequest(part="repeat", arguments=[2]),
    "function grad without cotangent": lambda: FunctionRequest(part="repeat", arguments=[torch.randn(2, 2, 5, 8), 2],
                                                               grad=True),
    "mha grad over calls of two shapes": lambda: MhaRequest(args=model_args(), calls=[mha_call(), mha_call(T=4)],
                                                            grad=True, cotangent=torch.randn(2, 5, 32)),
    "decode step that skips a position": lambda: decode(steps=([0, 0, 4], [0, 5, 1])),
    "decode past max_seq_len": lambda: decode(steps=([0, 0, 4], [0, 4, 5])),
    "decode batch above max_batch_size": lambda: decode(B=4),
    "decode x of another T than its step": lambda: decode(xs=[torch.randn(2, 4, 12), torch.randn(2, 2, 12)]),
    "decode wk sized for every head": lambda: decode(weights={"wq": torch.randn(12, 12), "wk": torch.randn(12, 12),
                                                              "wv": torch.randn(4, 12), "wo": torch.randn(12, 12)}),
    "decode n_heads not a multiple of n_kv_heads": lambda: decode(args={"dim": 12, "n_heads": 6, "n_kv_heads": 4,
                                                                        "max_seq_len": 8, "max_batch_size": 3}),
    "cache batch above max_batch_size": lambda: cache_request(steps=[cache_step(0, 5, B=4)]),
    "cache positions past max_seq_len": lambda: cache_request(steps=[cache_step(5, 4)]),
    "cache step of another dtype": lambda: cache_request(steps=[cache_step(0, 5, dtype=torch.float64)]),
    "cache step without v": lambda: cache_request(steps=[{"start_pos": 0, "k": torch.randn(2, 2, 5, 4)}]),
    "cache start_pos a bool": lambda: cache_request(steps=[{**cache_step(0, 5), "start_pos": False}]),
    "cache without steps": lambda: cache_request(steps=[]),
}


@pytest.mark.parametrize("name", BAD)
def test_a_malformed_request_is_refused_as_a_grader_error_when_built(name):
    with pytest.raises(BadRequest) as raised:
        BAD[name]()
    assert isinstance(raised.value, GraderError) and raised.value.exit_code == 2


def test_a_request_of_another_probe_or_no_probe_is_a_grader_error():
    request = HONEST[Probe.MHA_INTERFACE][0]
    with pytest.raises(BadRequest, match="takes a MhaRequest"):
        checked(Probe.MHA, request)
    with pytest.raises(BadRequest, match="not a Probe"):
        checked("mha_interface", request)
    # what a probe sees (forbidden calls, tampering) is counted against its part: another part's code is refused
    with pytest.raises(BadRequest, match="calls part repeat's code, not part cache's"):
        checked(Probe.REPEAT, FunctionRequest(part="cache", arguments=[torch.randn(2, 2, 5, 8), 2]))


def test_a_request_is_frozen_once_validated():
    request = HONEST[Probe.SDPA][0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.device = "gpu"


# --- through the sandbox -----------------------------------------------------------------------------

def grade_with(run) -> dict:
    """The reference solution graded by one check, `run(ctx) -> Outcome`."""
    spec = Check("sdpa.request", "sdpa", 1.0, "hidden", "请求", "request", run)
    report = grade_submission(REFERENCE, checks=[spec])
    return next(c for c in report["checks"] if c["id"] == "sdpa.request") | {"all_mistakes": report["mistakes"]}


def messages(check: dict) -> str:
    """Every language's message of a check (the report's language is not this test's concern)."""
    return " ".join(str(value) for key, value in check.items() if key.startswith("message"))


def assert_a_grader_error(check: dict, says: str) -> None:
    text = messages(check)
    assert not check["passed"] and check["mistakes"] == [] and check["all_mistakes"] == [], check
    assert any(error in text for error in INTERNAL_ERROR) and says in text, text


@pytest.mark.parametrize("fields, says", [({"is_casual": True}, "unexpected keyword argument 'is_casual'"),
                                          ({"is_causal": "True"}, "is_causal must be None or a bool")])
@pytest.mark.sandbox
def test_a_typo_in_a_check_is_a_grader_error_not_the_students_mistake(fields, says):
    def run(ctx) -> Outcome:
        ctx.student.call(Probe.SDPA, SdpaRequest(**qkv(), **fields))
        return Outcome(True)

    assert_a_grader_error(grade_with(run), says)


@pytest.mark.sandbox
def test_a_request_the_worker_cannot_apply_is_a_grader_error(monkeypatch):
    """Parent and worker disagree on a probe's fields (a field added to a request, not to its probe):
    the worker answers "bad request", the parent confirms it, and nothing is blamed on the student."""

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class GrownSdpaRequest(SdpaRequest):
        is_casual: bool = True

    monkeypatch.setitem(requests.REQUEST_TYPE, Probe.SDPA, GrownSdpaRequest)

    def run(ctx) -> Outcome:
        answer = ctx.student.call(Probe.SDPA, GrownSdpaRequest(**qkv(), is_causal=True))
        return Outcome(False, "", f"answered {sorted(answer)}", ["is-causal-typo"])

    assert_a_grader_error(grade_with(run), "the sdpa probe cannot take this request")


FORGE_BAD_REQUEST = '''

import io as _io, os as _os, stat as _stat, time as _time


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    """Answers every request with a forged "bad request", hoping for a grader error instead of a verdict."""
    buffer = _io.BytesIO()
    torch.save({"bad_request": "the grader's fault", "forbidden_calls": [], "tampered": []}, buffer)
    frame = buffer.getvalue()
    for fd in range(3, 1024):
        try:
            if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                _os.write(fd, len(frame).to_bytes(4, "big") + frame)
        except OSError:
            pass
    _time.sleep(10**6)
'''
HONEST_TWIN = '''

def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return None
'''


@pytest.mark.sandbox
def test_a_forged_bad_request_answer_is_tampering_and_gains_nothing(graded, rules_bypassed, tmp_path):
    """Part 1 forges the worker's "bad request" answer; its twin returns nothing. Part 2 is right in both."""
    reference = REFERENCE.read_text(encoding="utf-8")
    (tmp_path / "forged.py").write_text(reference + FORGE_BAD_REQUEST, encoding="utf-8")
    (tmp_path / "twin.py").write_text(reference + HONEST_TWIN, encoding="utf-8")
    forged, twin = graded(tmp_path / "forged.py"), graded(tmp_path / "twin.py")
    assert forged["score"] <= twin["score"] == PART["mha"].points, (forged["mistakes"], twin["mistakes"])
    assert "tampering" in forged["mistakes"] and "tampering" not in twin["mistakes"]
    integrity = next(c for c in forged["checks"] if c["id"] == "integrity.tampering")
    assert "'bad request' for a request the probe takes" in messages(integrity), integrity
    sdpa = [c for c in forged["checks"] if c["part"] == "sdpa"]
    assert sum(c["points"] for c in sdpa) == 0
    assert not any(error in messages(c) for c in forged["checks"] for error in INTERNAL_ERROR)
    assert sum(c["points"] for c in forged["checks"] if c["part"] == "mha") == PART["mha"].points
