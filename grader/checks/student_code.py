"""The one thin adapter between checks and student code (like CS336's tests/adapters.py).

Checks call `student.call(Probe.SDPA, SdpaRequest(...))` (one typed request per probe, validated
when built) and get plain data back; where the code ran (a confined worker, a fresh one after a
timeout) and where its graphs ran (the grading's judge, grader.judge) are hidden here. The same
checks therefore grade a notebook, a .py file or the reference solution. A request the worker
cannot apply is the grader's bug and raises `BadRequest`; a "bad request" answer to a request it
can apply was forged by student code: tampering.
"""
from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace

import torch

from grader.checks.decoys import calls_of, decoys as _decoys, tensors_in
from grader.catalog import rule_mistakes
from grader.judge.process import MAX_RUNS, Judge
from grader.sandbox import graph_probes
from grader.sandbox.confinement import Limits
from grader.sandbox.request_tensors import magnitude, sameness
from grader.sandbox.requests import BadRequest, Probe, checked
from grader.sandbox.worker_process import Worker, WorkerFailure
from grader.handin.source import Submission

GRAPHED = frozenset({Probe.SDPA, Probe.MHA, Probe.REPEAT, Probe.DECODE, Probe.CACHE, Probe.GQA})
"""Probes answered with graphs, each turned into the checks' answer by the judge, on the request's own tensors."""
READ_FROM_THE_GRAPH = ("count_ops", "gradcheck")
"""Request fields the parent answers from a graph itself (its operators counted, its gradients checked): they
are not sent, so the worker records the same call either way."""
# what the worker's guards refuse is reported under these ids: the catalog's rules group
RUNTIME_MISTAKES = rule_mistakes()


class StudentCode:
    """A submission's code behind the sandbox, for the duration of one grading."""

    def __init__(self, submission: Submission, limits: Limits, use_cuda: bool = False,
                 remaining: Callable[[], float] | None = None) -> None:
        """`remaining`: the seconds the hand-in has left, when its clock started before this grading (a fix's
        regrade shares the hand-in's one budget); by default the submission's whole time from now."""
        self.submission = submission
        self.limits = limits
        self.use_cuda = use_cuda
        self.load_errors: list[dict] = []
        self.names: list[str] = []
        self._worker_missing: list[str] = []  # isolation layers the worker could not apply
        self._judge_missing: list[str] = []  # the same of the judge
        self.forbidden_by_probe: dict[str, set[str]] = defaultdict(set)  # probe -> forbidden APIs it saw
        self.unsupported_by_probe: dict[str, set[str]] = defaultdict(set)  # probe -> operators off the allow-list
        self.tampered: set[str] = set()
        self.tampering_by_part: dict[str, set[str]] = defaultdict(set)  # part -> tampering first seen in its probes
        self._tampering_seen: set[str] = set()
        self.refused_by_part: dict[str, set[str]] = defaultdict(set)  # part -> "mistake: what" the guards refused
        self.failures: list[str] = []  # worker failure kinds seen (timeout, memory-limit, exited, ...)
        self._worker: Worker | None = None
        self._given_up: dict[str, WorkerFailure] = {}  # probe kind -> why its later calls fail at once
        self._load_failure: WorkerFailure | None = None
        self._answered: dict[tuple, dict] = {}  # a graphed probe's message to the worker -> its checked answer
        self._drawn_decoys: dict[tuple, list[torch.Tensor]] = {}  # this grading's decoys (grader.checks.decoys)
        self._judge: Judge | None = None  # runs this grading's graphs; a fresh one after it failed
        self._started = time.monotonic()
        self._clock = remaining

    def _remaining(self) -> float:
        if self._clock is not None:
            return self._clock()
        return self.limits.submission_seconds - (time.monotonic() - self._started)

    def _ensure_worker(self) -> Worker:
        if self._load_failure is not None:
            raise self._load_failure
        if self._worker is None or not self._worker.alive:
            if self._judge is None:  # forked first: it confines itself while the worker loads the code
                self._judge = Judge(self.limits, self.use_cuda)
            try:
                # loading is a read from the worker too: bounded by what the submission has left
                start_limits = replace(self.limits, probe_seconds=min(self.limits.probe_seconds, self._remaining()))
                self._worker = Worker(self.submission.source, start_limits, self.use_cuda)
            except WorkerFailure as failure:
                self._load_failure = failure
                self._record(failure)
                raise
            ready = self._worker.ready
            if not all(_is_list_of(ready.get(key), t) for key, t in (("load_errors", dict), ("names", str))):
                self._load_failure = WorkerFailure("tampering", "a forged ready message")
                self._record(self._load_failure)
                self.close()
                raise self._load_failure
            self.load_errors = ready["load_errors"]
            self.names = ready["names"]
            self._worker_missing = self._worker.missing_isolation
            self._attribute_tampering(self._parts, ready.get("tampered", []))  # done while loading: every part
            self._attribute_refusals(self._parts, ready.get("refused", []))
        return self._worker

    @property
    def missing_isolation(self) -> list[str]:
        """The isolation layers that did not take effect, the worker's and the judge's."""
        return self._worker_missing + self._judge_missing

    def ensure_loaded(self) -> None:
        """Start the worker (loading the code) so load errors are known; failures are recorded."""
        try:
            self._ensure_worker()
        except WorkerFailure:
            pass

    def call(self, probe: Probe, request) -> dict:
        """Run one probe on its request; a worker failure comes back as {"failure": kind, "error": {...}}.

        Once a probe of one kind has timed out or sent a forged answer, later probes of that
        kind fail at once: the part scores 0 without eating the other part's time, and the
        parent reads no more of what that code sends for it.
        """
        return self.call_many(probe, [request])[0]

    def call_many(self, probe: Probe, requests: list) -> list[dict]:
        """`call` for each request, with one exchange with the judge for all of them (a graphed probe): for
        requests that do not depend on each other's answers, whose caller stops at the first failure. A failure
        anywhere (the worker's on one request, the judge's on one run) is every request's answer."""
        fields = [checked(probe, request) for request in requests]  # BadRequest (a GraderError) before anything is sent
        kind = probe.part
        try:
            traced = []
            for one in fields:
                seconds = min(self.limits.probe_seconds, self._remaining())
                if kind in self._given_up:
                    raise self._given_up[kind]
                if seconds <= 0:
                    raise WorkerFailure("timeout", f"the submission used its {self.limits.submission_seconds:.0f} s "
                                                   f"budget")
                answer = self._worker_answer(probe, one, seconds)
                self.forbidden_by_probe[kind] |= set(answer.get("forbidden_calls", []))
                traced.append(answer)
            answers = self._graded_from_graphs(probe, traced, fields) if probe in GRAPHED else traced
        except WorkerFailure as failure:
            if failure is self._given_up.get(kind):  # recorded when it first happened
                self.failures.append(failure.kind)
            else:
                self._record(failure, (kind,))
            if failure.kind == "timeout":
                self._given_up.setdefault(kind, WorkerFailure(
                    "timeout", f"an earlier {kind} call did not finish within {self.limits.probe_seconds:.0f} s"))
            if failure.kind == "tampering":
                self._given_up.setdefault(kind, WorkerFailure("tampering", f"an earlier {kind} answer was refused"))
            if failure.kind == "submission-too-costly":  # the judge's: every later graph of the part would cost as much
                self._given_up.setdefault(kind, failure)
            return [{"failure": failure.kind, "error": {"type": failure.kind, "message": failure.detail, "where": None}}
                    for _ in requests]
        for answer in answers:
            seen_tampering = list(answer.get("tampered", [])) + (["returned a tensor subclass"]
                                                                 if _has_subclass(answer) else [])
            self.tampered.update(seen_tampering)
            self._attribute_tampering((kind,), seen_tampering)
            self._attribute_refusals((kind,), answer.get("refused", []))
        return answers

    def _worker_answer(self, probe: Probe, fields: dict, seconds: float) -> dict:
        """The worker's checked answer to the message this request makes. A graphed probe sends decoys, which
        depend only on the request's shapes, dtypes and other fields: the same message again gets the answer
        the worker already gave to it (about a fifth of a grading's probes repeat one), and the parent still
        runs that graph on each request's own tensors."""
        sent = message_fields(probe, fields)
        message = _message_key(probe, sent) if probe in GRAPHED else None
        if message in self._answered:
            return self._answered[message]
        answer = self._ensure_worker().call(probe.value, _decoys(sent, self._drawn_decoys) if probe in GRAPHED else sent,
                                            seconds)
        if "bad_request" in answer:
            _raise_if_genuine(probe, sent)
            self.close()
            raise WorkerFailure("tampering", "a forged answer: 'bad request' for a request the probe takes")
        if not _fields_read_here_are_plain(answer):
            self.close()
            raise WorkerFailure("tampering", "a forged answer: the fields every answer carries have wrong types")
        # a world of another machine loaded for this request (grader/sandbox/worker.py): done while loading, both parts
        loaded = answer.get("world_loaded", {})
        self._attribute_tampering(self._parts, loaded.get("tampered", []))
        self._attribute_refusals(self._parts, loaded.get("refused", []))
        if "answer_too_large" in answer:  # the worker's own word, which costs only this hand-in's part
            self.forbidden_by_probe[probe.part] |= set(answer.get("forbidden_calls", []))
            self.tampered.update(answer.get("tampered", []))
            self._attribute_tampering((probe.part,), answer.get("tampered", []))
            raise WorkerFailure("submission-too-costly", _too_large(answer["answer_too_large"]))
        if answer.get("cuda_peak_bytes", 0) > self.limits.memory_bytes:
            self.close()
            raise WorkerFailure("memory-limit", f"GPU memory peaked at {answer['cuda_peak_bytes'] >> 20} MiB, "
                                                f"above the {self.limits.memory_bytes >> 20} MiB limit")
        if message is not None:
            self._answered[message] = answer
        return answer

    def _ensure_judge(self) -> Judge:
        if self._judge is None or not self._judge.alive:
            self._judge = Judge(self.limits, self.use_cuda)
        self._judge_missing = [f"judge: {missing}" for missing in self._judge.missing_isolation]
        return self._judge

    def _graded_from_graphs(self, probe: Probe, traced: list[dict], fields: list[dict]) -> list[dict]:
        """The checks' answers computed by the judge from the worker's graphs, each on its request's own tensors, in
        one exchange; the worker's tampering and refusal records carried over. A graph the recorder cannot have
        written is a forged answer; a graph that ends the judge costs the part (JudgeFailure, a WorkerFailure of
        this hand-in's)."""
        graded = []
        for start in range(0, len(traced), MAX_RUNS):
            runs = list(zip(traced[start:start + MAX_RUNS], fields[start:start + MAX_RUNS]))
            judged_runs = self._ensure_judge().judge_many(probe.value, runs, left=self._remaining())
            for (answer, _), judged in zip(runs, judged_runs, strict=True):
                self.forbidden_by_probe[probe.part] |= set(judged["forbidden"])
                self.unsupported_by_probe[probe.part] |= set(judged["unsupported"])
                if judged["refused"]:
                    self.close()
                    raise WorkerFailure("tampering", f"a forged graph: {judged['refused'][0]}")
                graded.append({**judged["answer"], **{key: answer[key] for key in ("tampered", "refused")
                                                      if key in answer}})
        return graded

    def _attribute_refusals(self, parts: tuple[str, ...], refused) -> None:
        """What the worker's guards refused, as "mistake: what" under a mistake id of the rules; anything
        else in the field is student code's, and ignored (a refusal raised in its code anyway)."""
        for item in refused if _is_list_of(refused, str) else []:
            if item.split(":", 1)[0] in RUNTIME_MISTAKES:
                for part in parts:
                    self.refused_by_part[part].add(item)

    def _record(self, failure: WorkerFailure, parts: tuple[str, ...] | None = None) -> None:
        """Count a worker failure; a refused answer is tampering of the parts it concerns (while
        loading, every part: the code is the same for all)."""
        self.failures.append(failure.kind)
        if failure.kind == "tampering":
            self.tampered.add(failure.detail)
            self._attribute_tampering(self._parts if parts is None else parts, [failure.detail])

    @property
    def _parts(self) -> tuple[str, ...]:
        return self.submission.exercise.part_ids

    def _attribute_tampering(self, parts: tuple[str, ...], seen: list[str]) -> None:
        """A patch persists in the worker and shows in every later answer: it belongs to the part
        whose probe first saw it (or to both when it was there right after loading)."""
        for item in seen:
            if isinstance(item, str) and item not in self._tampering_seen:
                self._tampering_seen.add(item)
                for part in parts:
                    self.tampering_by_part[part].add(item)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
        if self._judge is not None:
            self._judge.close()
            self._judge = None


def message_fields(probe: Probe, fields: dict) -> dict:
    """The fields of a request the worker's probe takes (its decoys are drawn from these). A call's seed is the
    parent's, drawn from the grading's secret for the graph's dropout (grader.checks.secret): the worker gets the
    call's place instead."""
    if probe not in GRAPHED:
        return fields
    sent = {name: value for name, value in fields.items() if name not in READ_FROM_THE_GRAPH}
    if isinstance(sent.get("calls"), list):
        sent["calls"] = [{**call, "seed": place} if "seed" in call else call for place, call in enumerate(sent["calls"])]
    return sent


def _raise_if_genuine(probe: Probe, fields: dict) -> None:
    """A "bad request" answer is believed only when the parent's own copy of the probes agrees:
    then it is the grader's bug. The worker's text is never used, it may be student code's."""
    problem = graph_probes.request_problem(probe.value, fields)
    if problem is not None:
        raise BadRequest(problem)


def _message_key(probe: Probe, fields: dict) -> tuple | None:
    """What decides the message `decoys` makes of a request, as a key: each tensor's shape, dtype and magnitude in
    the order the decoys are drawn, which tensors are one another or equal (`request_tensors.sameness`), every other
    field by its type and value; None (not kept) for a field of another kind, whose value the key could not hold."""
    def key(value):
        if isinstance(value, torch.Tensor):
            return ("tensor", tuple(value.shape), str(value.dtype), magnitude(value))
        if isinstance(value, dict):
            return ("dict", tuple((name, key(item)) for name, item in value.items()))
        if isinstance(value, list):
            return ("list", tuple(key(item) for item in value))
        if value is None or type(value) in (bool, int, float, str):
            return (type(value).__name__, repr(value))
        raise TypeError(type(value).__name__)

    try:
        return (probe.value, key(fields), sameness(tensors_in(fields), calls_of(fields)))
    except TypeError:
        return None


def _too_large(size) -> str:
    """Why an answer the worker found too large to send is not graded, and what makes it small."""
    said = f"{size} " if type(size) is int else ""
    return (f"这份代码的计算图连同其中的常量（在调用之外建好的张量，例如模块级的全局掩码）共 {said}字节，超过评分程序能检查的上限，"
            f"本部分不能评分。把掩码用 register_buffer 注册为按 max_seq_len 建的 buffer，或在 forward 里按长度 T 建掩码 / "
            f"this code's graphs with their constants (tensors made outside the call, such as a module-level mask) "
            f"take {said}bytes, above what the grader can check: the part is not graded. Register the mask as a buffer "
            f"sized max_seq_len (register_buffer), or build it for length T inside forward")


def _is_list_of(value, kind: type) -> bool:
    return type(value) is list and all(type(item) is kind for item in value)


def _fields_read_here_are_plain(answer: dict) -> bool:
    """The fields this adapter reads from every answer have the types the worker sends."""
    calls = answer.get("calls", [])
    loaded = answer.get("world_loaded", {})
    return (all(_is_list_of(answer.get(key, []), str) for key in ("forbidden_calls", "tampered", "op_names", "refused"))
            and type(loaded) is dict and all(_is_list_of(loaded.get(key, []), str) for key in ("tampered", "refused"))
            and type(answer.get("cuda_peak_bytes", 0)) is int and _is_list_of(calls, dict)
            and all(_is_list_of(call.get("op_names", []), str) for call in calls))


def _has_subclass(answer: dict) -> bool:
    """Whether a probe described a returned tensor as a subclass (`probes._plain`). Iterative:
    the answer is already bounded (`answers.decode`), so this visits at most its budget."""
    pending = [answer]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if value.get("subclass"):
                return True
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False
