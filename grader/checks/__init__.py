"""Checks: behavioural tests of the student's code, each with its grading metadata beside it.

`@check(...)` only records id, part, points and visibility (like gradescope-utils' @weight);
the reporting layer reads them. A check takes a `Context` and returns an `Outcome`; it reaches
student code only through `ctx.student` (the adapter) and computes its verdict here, in the
trusted parent, against float64 references.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import torch

from grader import diagnosis
from grader.adapter import StudentCode
from grader.policy import Violation, for_part
from grader.assignment import GRADED_NAME
from grader.assignment import PARTS as DECLARED_PARTS

PARTS = {part.id: part.label for part in DECLARED_PARTS}


@dataclass
class Outcome:
    passed: bool
    zh: str = ""  # what property held or failed, with numbers; the catalog explains the mistakes
    en: str = ""
    mistakes: list[str] = field(default_factory=list)
    where: dict | None = None  # the line of student code involved
    figure: dict | None = None  # {"student": [[...]], "expected": [[...]]}: one attention matrix each, to draw
    advice: list[str] = field(default_factory=list)  # mistake ids explained without costing points


@dataclass(frozen=True)
class Check:
    id: str
    part: str
    points: float
    visibility: str  # "public" (also run by the exercises' self-check) or "hidden"
    title_zh: str
    title_en: str
    run: Callable[["Context"], Outcome]
    gate: bool = False  # failing a gate zeroes its whole part (forbidden APIs, rules broken, no attention)


REGISTRY: list[Check] = []


def check(id: str, *, part: str, points: float, visibility: str, title_zh: str, title_en: str, gate: bool = False):
    def register(function: Callable[["Context"], Outcome]):
        REGISTRY.append(Check(id, part, points, visibility, title_zh, title_en, function, gate))
        return function

    return register


@dataclass
class Context:
    student: StudentCode
    static: dict  # mistake id -> places, from static_analysis.analyse
    cuda: bool  # run the real-CUDA variants too
    violations: list[Violation] = field(default_factory=list)  # grading rules broken, from policy.violations

    def generator(self, seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)


def passed(zh: str = "", en: str = "") -> Outcome:
    return Outcome(True, zh, en)


def failed(zh: str, en: str, mistakes: list[str] | tuple = (), where: dict | None = None) -> Outcome:
    return Outcome(False, zh, en, [m for m in dict.fromkeys(mistakes) if m], where)


def failed_with_error(ctx: Context, error: dict, doing_zh: str, doing_en: str, *, max_seq_len: int | None = None,
                      extra: tuple = ()) -> Outcome:
    """A probe raised: say what was being done, the exception, and the mistake it points to."""
    error = _root_cause(ctx, error)
    mistakes = diagnosis.from_error(error, ctx.static, max_seq_len=max_seq_len)
    if set(extra) & diagnosis.DEVICE_MISTAKES:  # the caller knows better which device mistake it is
        mistakes = [m for m in mistakes if m not in diagnosis.DEVICE_MISTAKES]
    mistakes += list(extra)
    summary = f"{error.get('type')}: {error.get('message', '')}".strip()[:600]
    return failed(f"{doing_zh}时出错：{summary}", f"Error while {doing_en}: {summary}", mistakes,
                  ctx.student.submission.locate(error.get("where")))


def _root_cause(ctx: Context, error: dict) -> dict:
    """A graded name that is missing because its definition failed to load: report that failure."""
    if error.get("type") != "NameError" or not any(n in error.get("message", "") for n in GRADED_NAME.values()):
        return error
    if ctx.student.submission.syntax_errors:
        first = ctx.student.submission.syntax_errors[0]
        cell = {"cell": first["cell"] + 1} if ctx.student.submission.is_notebook else {}
        return {"type": first["type"], "message": first["message"],
                "where": {"line": first["line"], "text": first["text"], "function": "<module>", "located": True, **cell}}
    for load_error in ctx.student.load_errors:
        return load_error
    return error


DTYPE_HANDLING = re.compile(r"without overflow|same dtype|expected scalar type|dtype", re.I)
LOOP_MARGIN = 6  # ops: a loop over 8 heads instead of 2 (or 16 positions instead of 4) adds far more


def loop_verdict(counts: dict[str, int], base: str) -> Outcome:
    """Ops dispatched per call for a base shape and shapes with more batch, heads or positions.

    A few ops of difference are legitimate (a view here, a copy there); a Python loop over the
    grown dimension adds at least one op per extra iteration, many more than LOOP_MARGIN.
    """
    listing = ", ".join(f"{shape}: {n}" for shape, n in counts.items())
    grown = [shape for shape, n in counts.items() if n - counts[base] >= LOOP_MARGIN]
    if grown:
        return failed(f"张量算子的数量随形状增长（{listing}），说明在 Python 里循环了。",
                      f"The number of tensor ops grows with the shape ({listing}): a Python loop.", ["python-loop"])
    return passed(f"算子数量与形状无关（{listing}）。", f"The op count does not grow with the shape ({listing}).")


def forbidden_api_gate(ctx: Context, part: str) -> Outcome:
    """The built-in attention seen at run time during this part's probes (a wrapped function was
    called, or its aten operator was dispatched): the part scores 0."""
    used = sorted(ctx.student.forbidden_by_probe.get(part, set()))
    if used:
        return failed(f"运行时检测到调用了 {', '.join(used)}：本部分记 0 分。",
                      f"Detected at run time: {', '.join(used)}. This part scores 0.", ["forbidden-api"])
    return passed()


def rules_gate(ctx: Context, part: str) -> Outcome:
    """The grading rules (policy.py), read in the text before anything ran, and tampering the worker
    saw while this part's probes ran: either zeroes the part, quoting what was seen."""
    broken = for_part(ctx.violations, part)
    seen = sorted(ctx.student.tampering_by_part.get(part, set()))
    if not broken and not seen:
        return passed()
    places = [ctx.student.submission.locate({"line": v.line, "text": v.text, "function": "<module>"}) for v in broken]
    zh = [v.describe("zh", p["line"], p.get("cell")) for v, p in zip(broken[:6], places)]
    en = [v.describe("en", p["line"], p.get("cell")) for v, p in zip(broken[:6], places)]
    zh += [f"运行时检测到：{', '.join(seen)}。"] if seen else []
    en += [f"Seen at run time: {', '.join(seen)}."] if seen else []
    mistakes = [v.mistake for v in broken] + (["tampering"] if seen else [])
    where = places[0] if places else None
    return failed("本部分的代码违反了评分规则，记 0 分：\n" + "\n".join(zh),
                  "This part's code breaks the grading rules and scores 0:\n" + "\n".join(en), mistakes, where)


def changed(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """Bit-level difference, NaNs in the same places counting as equal."""
    if a is None or b is None or a.shape != b.shape:
        return True
    return not torch.equal(torch.nan_to_num(a.double(), nan=1e300), torch.nan_to_num(b.double(), nan=1e300))


def resource_failure(outcome: Outcome) -> bool:
    """Out of time or memory, or the process ended: trying other inputs only burns the budget."""
    return bool({"timeout", "memory-limit", "tampering"} & set(outcome.mistakes))


def attention_verdict(evidence: list[dict]) -> Outcome:
    """Each entry, for one input shape: {"label", "ran", "q", "k", "mixes"} (the output or weights
    changed with Q / with K / at other positions when V changed at one). Property points need a
    run that shows all three, and no run that shows less: identity, uniform or zero weights and a
    projection of V alone all fail; a wrong but real attention (unscaled, wrong softmax dim, ...) passes."""
    ran = [e for e in evidence if e["ran"]]
    if not ran:  # the first failure says why, and names its mistake
        first = evidence[0]["problem"]
        first.zh = "代码没有正常返回结果，没有任何计算注意力的证据：本部分记 0 分。" + first.zh
        first.en = "The code returned no result, so nothing shows that it computes attention: this part scores 0. " + first.en
        return first
    for e in ran:
        missing_zh = [t for t, ok in (("不随 Q 变化", e["q"]), ("不随 K 变化", e["k"]),
                                      ("各位置的输出没有混合其他位置的 V", e["mixes"])) if not ok]
        missing_en = [t for t, ok in (("does not change with Q", e["q"]), ("does not change with K", e["k"]),
                                      ("no position's output mixes in V from other positions", e["mixes"])) if not ok]
        if missing_en:
            return failed(f"{e['label']}：结果{'；'.join(missing_zh)}。这不是注意力，本部分记 0 分。",
                          f"{e['label']}: the result {'; '.join(missing_en)}. That is not attention: this part scores 0.",
                          ["no-attention"])
    return passed("输出随 Q、K 变化，并对各位置的 V 加权混合：确实在计算注意力。",
                  "The output changes with Q and K and mixes V across positions: it computes attention.")


def is_dtype_handling(error: dict | None) -> bool:
    return bool(error) and bool(DTYPE_HANDLING.search(error.get("message", "")))


def dtype_handling_advice(ctx: Context, error: dict, dtype: str) -> tuple[str, str, list[str]] | None:
    """A low-precision run that failed on dtype handling alone (a -1e9 fill that overflows float16,
    a float32 mask promoting half scores): worth knowing for mixed precision, but the exercise is
    specified in float32, so it is advice, not a lost point. None for any other error."""
    message = error.get("message", "")
    if not is_dtype_handling(error):
        return None
    mistakes = diagnosis.from_error(error, ctx.static)
    zh = f"{dtype} 输入时代码报错（{error.get('type')}: {message[:200]}）：本题按 float32 评分，不扣分，但混合精度训练时会出错。"
    en = (f"With {dtype} inputs the code raises ({error.get('type')}: {message[:200]}): graded in float32, so no points "
          "are lost, but mixed-precision training would break.")
    return zh, en, mistakes


def checks_for(part: str | None = None, visibility: str | None = None) -> list[Check]:
    # Importing the modules registers their checks, in the order they are defined.
    from grader.checks import mha, sdpa  # noqa: F401

    return [c for c in REGISTRY if (part is None or c.part == part) and (visibility is None or c.visibility == visibility)]
