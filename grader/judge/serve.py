"""The judge's side: confine, then turn each graph the parent sends into the checks' answer.

The judge is forked from the command's fork server, as a worker is, and imports what it runs (the graph's
decoder, runner and answers) before it confines itself. Requests come from the trusted parent as pickles: a
probe's name and its runs, each the worker's answer (sent once per grading; later runs name it by number, so a
graph is sent and decoded once however often it is run) and the request's fields, with the parent's own tensors;
one reply goes back per run, as each run ends.
Answers go back as `torch.save` bytes, which the parent reads as it reads a worker's (grader.sandbox.answers):
the judge ran hostile graphs, so what it says is bounded before it is believed.
"""
from __future__ import annotations

import hashlib
import io
import pickle

import torch

from grader.graph import answers, cache_answers, decode_chain, function_answers, gqa_answers
from grader.handin import parent_budget
from grader.judge.confinement import confine_judge
from grader.process import single_threaded_torch
from grader.sandbox.confinement import Limits, confine

TURNED = {"sdpa": answers.sdpa, "mha": answers.mha, "repeat": function_answers.function_call,
          "gqa_decode": decode_chain.decode_steps, "cache": cache_answers.cache, "gqa": gqa_answers.gqa}
"""Each graphed probe's answer, computed from its graph on the request's own tensors."""
MAX_KEPT = 4096
"""Worker answers one judge keeps: a grading sends a few dozen distinct ones."""


def encode(reply: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(reply, buffer)
    return buffer.getvalue()


class Court:
    """What one judge keeps between requests: the worker's answers it was sent, their decoded graphs, and the reply
    to each run it made (checks of one grading ask for a few runs again: the same graph on the same fields, which
    gives the same reply, the run's random draws being seeded by its fields)."""

    def __init__(self) -> None:
        self.kept: dict[int, dict] = {}
        self.decoded: dict = {}  # shared by every request's answers.Findings
        self.replied: dict[tuple, dict] = {}  # (probe, answer number, fingerprint of the fields) -> the reply

    def replies(self, request: dict):
        """The reply to each run of the request, in order: {"answer", "forbidden", "unsupported", "refused"}, or
        {"too_costly": why} where the graph ran over a bound, or {"internal": what} for the grader's own error;
        a run that fails ends the request (the parent reads no reply after it)."""
        for run in request["args"]["runs"]:
            reply = self.reply(request["probe"], run)
            yield reply
            if "answer" not in reply:
                return

    def reply(self, probe: str, run: dict) -> dict:
        """One run's reply: the worker's answer it names (sent with it the first time) on the run's fields."""
        if "traced" in run:
            if len(self.kept) >= MAX_KEPT:
                return {"internal": f"more than {MAX_KEPT} distinct answers in one grading"}
            self.kept[run["answer_id"]] = run["traced"]
        key = (probe, run["answer_id"], fingerprint(run["fields"]))
        if key in self.replied:  # never None: a run whose fields have no fingerprint is run each time
            return self.replied[key]
        findings = answers.Findings(self.decoded)
        try:
            answer = TURNED[probe](self.kept[run["answer_id"]], run["fields"], findings)
        except parent_budget.OverBudget as spent:
            return {"too_costly": spent.en[:2000]}
        except Exception as error:  # the grader's bug, told to the check that asked (an internal error there)
            return {"internal": f"{type(error).__name__}: {error}"[:2000]}
        reply = {"answer": answer, "forbidden": sorted(findings.forbidden), "unsupported": sorted(findings.unsupported),
                 "refused": [str(reason)[:2000] for reason in findings.refused[:16]]}
        if key[2] is not None and len(self.replied) < MAX_KEPT:
            self.replied[key] = reply
        return reply


PLAIN = (str, int, float, bool, type(None))


def fingerprint(fields) -> bytes | None:
    """A digest of a run's fields (the parent's own request): every value, each tensor's dtype, shape, strides and
    bytes; None where a value is of a kind not read here."""
    digest = hashlib.blake2b(digest_size=32)
    pending = [fields]
    while pending:
        value = pending.pop()
        kind = type(value)
        digest.update(kind.__name__.encode() + b"\0")
        if kind is dict:
            digest.update(repr(list(value)).encode())
            pending.extend(value.values())
        elif kind is list or kind is tuple:
            digest.update(str(len(value)).encode())
            pending.extend(value)
        elif kind is torch.Tensor:
            digest.update(f"{value.dtype}{tuple(value.shape)}{value.stride()}{value.storage_offset()}{value.device}"
                          f"{value.is_conj()}{value.is_neg()}{value.requires_grad}".encode())
            plain = value.detach().resolve_conj().resolve_neg().contiguous().reshape(-1).cpu()
            digest.update(plain.view(torch.uint8).numpy().tobytes() if plain.numel() else b"")
        elif kind in PLAIN:
            digest.update(repr(value).encode())
        else:
            return None
        digest.update(b"\1")
    return digest.digest()


def set_up(keep_fd: int, limits: Limits, use_cuda: bool, cpu_seconds: float, layers_off: frozenset[str] = frozenset(),
           judge_layers_off: frozenset[str] = frozenset()) -> list[str]:
    """Confine this process as a judge: the worker's layers, then the judge's own; the layers that did not take
    effect. `keep_fd` is the pipe to the parent, the only descriptor left open."""
    missing = confine(limits, keep_fd=keep_fd, cuda=use_cuda, layers_off=layers_off)
    return missing + confine_judge(cpu_seconds, judge_layers_off)


def judge_main(connection, limits: Limits, use_cuda: bool, cpu_seconds: float,
               layers_off: frozenset[str] = frozenset(), judge_layers_off: frozenset[str] = frozenset()) -> None:
    """Entry point of the judge process (started by grader.judge.process.Judge)."""
    single_threaded_torch()
    try:
        missing = set_up(connection.fileno(), limits, use_cuda, cpu_seconds, layers_off, judge_layers_off)
    except Exception as error:
        connection.send_bytes(encode({"setup_failed": f"{type(error).__name__}: {error}"}))
        return
    connection.send_bytes(encode({"confined": True, "missing_isolation": missing}))
    torch.backends.cuda.matmul.allow_tf32 = False  # graded numerics never use TF32
    torch.backends.cudnn.allow_tf32 = False
    court = Court()
    # the grading's CPU budget, read between nodes (grader.graph.run): over it, a graph is `too_costly` before the
    # kernel's RLIMIT_CPU, a little above it, ends the judge
    with parent_budget.charged(parent_budget.ParentBudget(cpu_seconds=cpu_seconds)):
        while True:
            try:
                request = pickle.loads(connection.recv_bytes())
            except EOFError:
                return
            for reply in court.replies(request):
                try:
                    payload = encode(reply)
                except Exception as error:  # a value torch.save refuses: it ends the request as a failed run does
                    connection.send_bytes(encode({"internal": f"unserialisable answer ({type(error).__name__}: "
                                                              f"{error})"[:2000]}))
                    break
                connection.send_bytes(payload)
