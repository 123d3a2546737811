"""The parent's side of the judge: one confined judge per grading, and what its failures cost.

A judge is forked from the command's fork server like a worker (grader.sandbox.worker_process: a uid and a
memory cgroup of its own, the worker's confinement) and serves every graph of one grading over its pipe: one
fork per grading, not one per probe. It is ended with the grading, so the next hand-in gets a fresh one.

Whatever a graph does to the judge costs that hand-in only, as `JudgeFailure`: a crash (any signal), memory or
CPU exhausted, an answer not within the deadline, or an exit are `submission-too-costly`; an answer the parent
refuses (it breaks what any honest graph's answer is) is `tampering`. The reply is read with the worker's
deadlines and bounds (`frames`, `answers.decode`), then checked for the fields the parent reads.
"""
from __future__ import annotations

import signal
import time

from grader.judge.confinement import check_layers_off
from grader.sandbox.confinement import Limits
from grader.sandbox.worker_process import SETUP_SECONDS, Worker, WorkerFailure

CPU_SECONDS = 30.0
"""The judge's CPU time for one grading (RLIMIT_CPU): an honest grading's graphs take about one second."""
TOO_COSTLY, TAMPERING = "submission-too-costly", "tampering"
MAX_RUNS = 16
"""Graph runs in one request to the judge (a part's independent probes at one shape are 7 at most)."""


class JudgeFailure(WorkerFailure):
    """The judge could not answer about this hand-in's graph: `kind` is submission-too-costly or tampering, and
    `detail` says why, in Chinese and in English."""


def _judge_entry(*args) -> None:
    """The judge process's target: the fork server imports grader.judge.serve in the child only."""
    from grader.judge import serve

    serve.judge_main(*args)


def _failure(failure: WorkerFailure, seconds: float, exit_code: int | None) -> JudgeFailure:
    """How the judge ended, said for the hand-in whose graph ended it."""
    if failure.kind == "tampering":
        return JudgeFailure(TAMPERING, f"评分程序的判定进程对这份代码的计算图给出的结果被拒绝（{failure.detail}） / "
                                       f"the grader's judge gave an answer for this code's graph that was refused "
                                       f"({failure.detail})")
    if failure.kind == "timeout":
        why_zh, why_en = f"超过 {seconds:g} 秒仍未算完", f"did not finish within {seconds:g} s"
    elif exit_code == -signal.SIGXCPU:
        why_zh, why_en = "耗尽了 CPU 时间", "exhausted its CPU time"
    elif exit_code == -signal.SIGKILL or failure.kind == "memory-limit":
        why_zh, why_en = "耗尽了内存或 CPU 时间", "exhausted its memory or CPU time"
    elif exit_code is not None and exit_code < 0:
        why_zh, why_en = f"使其崩溃（信号 {-exit_code}）", f"crashed it (signal {-exit_code})"
    else:
        why_zh, why_en = f"使其退出（{exit_code}）", f"ended it (exit status {exit_code})"
    return JudgeFailure(TOO_COSTLY, f"这份代码的计算图在评分程序的判定进程中{why_zh}，本部分不能评分 / "
                                    f"this code's graph, run by the grader's judge, {why_en}: the part is not graded")


class Judge(Worker):
    """One confined process that runs the graphs of one grading."""

    def __init__(self, limits: Limits, use_cuda: bool, *, cpu_seconds: float | None = None,
                 layers_off: frozenset[str] = frozenset(), judge_layers_off: frozenset[str] = frozenset()) -> None:
        """`cpu_seconds`: CPU_SECONDS unless given. `layers_off` and `judge_layers_off` exist for the judge's own
        tests, refused outside a pytest session."""
        check_layers_off(judge_layers_off)
        cpu_seconds = CPU_SECONDS if cpu_seconds is None else cpu_seconds
        self._sent: dict[int, tuple[int, dict]] = {}  # id(worker answer) -> (its number here, the answer kept alive)
        # forked now, its first frame read when first asked: it confines itself while the worker loads the code
        self._no_cgroup = self._spawn(_judge_entry, (use_cuda, cpu_seconds, frozenset(layers_off),
                                                     frozenset(judge_layers_off)), limits, layers_off)
        self._missing: list[str] | None = None

    @property
    def missing_isolation(self) -> list[str]:
        """The isolation layers the judge could not apply."""
        return self._read_setup()

    def _read_setup(self) -> list[str]:
        """The judge's first frame, read once: what it could not apply (SandboxUnavailable where it could not
        confine itself, as for a worker)."""
        if self._missing is None:
            self._missing = self._confined(SETUP_SECONDS) + ([f"memory cgroup ({self._no_cgroup})"]
                                                             if self._no_cgroup else [])
        return self._missing

    def judge(self, probe: str, traced: dict, fields: dict, *, left: float | None = None) -> dict:
        """{"answer", "forbidden", "unsupported", "refused"} for the worker's answer `traced` on the request's
        `fields`; JudgeFailure where the graph cost the judge its life, time or memory, or its answer is refused;
        RuntimeError for the grader's own error in the judge. `left`: the seconds the submission has left."""
        return next(self.judge_many(probe, [(traced, fields)], left=left))

    def judge_many(self, probe: str, runs: list[tuple[dict, dict]], *, left: float | None = None):
        """`judge` for each (worker answer, request fields) in `runs`, in one request: the judge runs them in order
        and sends one reply per run, each read and checked on its own (the worker's deadlines and bounds per
        reply) and yielded as it comes, so the n-th reply is the n-th run's and what the runs before a failure
        found is kept. A failed run ends the batch (JudgeFailure or RuntimeError as for `judge`) and this judge
        with it: the runs after it are not read. `left`: the seconds the submission has left, which bound every
        wait here too (a probe's seconds per reply, never past the submission's end), so slow graphs cannot add up
        past its budget."""
        if not 0 < len(runs) <= MAX_RUNS:
            raise ValueError(f"a batch holds 1 to {MAX_RUNS} runs, not {len(runs)}")
        self._read_setup()
        messages = []
        for traced, fields in runs:
            known = self._sent.get(id(traced))
            message = {"fields": fields}
            if known is None or known[1] is not traced:
                known = self._sent[id(traced)] = (len(self._sent), traced)
                message["traced"] = traced
            message["answer_id"] = known[0]
            messages.append(message)
        end = time.monotonic() + (self.limits.probe_seconds if left is None else left)
        seconds = min(self.limits.probe_seconds, end - time.monotonic())
        try:
            if seconds <= 0:
                raise WorkerFailure("timeout", "the submission used its budget")
            self._send(probe, {"runs": messages}, seconds)
            for _ in messages:  # each reply within a run's seconds: the judge sends each as its run ends
                seconds = min(self.limits.probe_seconds, end - time.monotonic())
                reply = _checked(self._receive(max(0.0, seconds)), self)
                yield reply
        except JudgeFailure:
            raise
        except WorkerFailure as failure:
            self.close()
            raise _failure(failure, seconds, self.process.exitcode) from None
        except RuntimeError:
            self.close()  # it sent no reply for the runs after the one that failed: a fresh judge for what follows
            raise


def _checked(reply: dict, judge: Judge) -> dict:
    if "too_costly" in reply:
        judge.close()
        raise JudgeFailure(TOO_COSTLY, f"这份代码的计算图超出了评分程序判定进程的上限 / {str(reply['too_costly'])[:600]}")
    if "internal" in reply and type(reply["internal"]) is str:
        raise RuntimeError(f"in the judge: {reply['internal']}")
    lists = [reply.get(key) for key in ("forbidden", "unsupported", "refused")]
    if type(reply.get("answer")) is not dict or not all(type(v) is list and all(type(s) is str for s in v)
                                                        for v in lists):
        judge.close()
        raise _failure(WorkerFailure("tampering", "a reply without the fields every reply carries"), 0, None)
    return reply
