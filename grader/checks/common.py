"""What the parts' checks share, each written once: tolerances, numeric comparison, the mistake an
exception or a wrong variant names, the device sweep, the op-count verdict, and the rule for a check that
cannot judge without correct values (low-precision advice is in `dtypes`)."""
from __future__ import annotations

from typing import Callable

import torch

from grader.checks import diagnosis, reference
from grader.checks import Context, Outcome, failed, passed
from grader.checks.device_questions import fails_on_the_cpu_too
from grader.graph.devices import CPU_BESIDE_A_GPU, STAND_INS

# Tolerances against the float64 reference, per input dtype. float32: unit roundoff 6e-8, a
# d_k-term dot product, a softmax and a T-term average of O(1) values stay far below 1e-5;
# float16 (roundoff 4.9e-4) and bfloat16 (3.9e-3) get about twenty roundoffs of headroom.
TOLERANCE = {torch.float32: (1e-5, 1e-4), torch.float64: (1e-10, 1e-8), torch.float16: (1e-2, 1e-2),
             torch.bfloat16: (8e-2, 8e-2)}
# The module chains four projections around the attention: twice the headroom.
MODULE_TOLERANCE = {**TOLERANCE, torch.float16: (2e-2, 2e-2), torch.bfloat16: (1.6e-1, 1.6e-1)}
GRADIENT_MISTAKES = ("broken-grad", "inplace-autograd")  # what a gradient check finds on its own
LOOP_MARGIN = 6  # ops: a loop over 8 more heads (or positions, or samples: LOOP_STEP) adds more
LOOP_CAP = 250
"""Ops at the base shape beyond which the code loops: honest styles dispatch at most 31 in Part 1 and 57 in
Part 2 (every correct style in tests/, traced), and a loop padded to a fixed length costs at least 2 ops a step,
so under the cap it covers at most 125 steps and the probe at LOOP_GROWN shows it grow."""
LOOP_STEP = range(8, 13)  # the growth at the op count's second stage, per grading: 8 steps of a loop > LOOP_MARGIN
LOOP_GROWN = range(128, 144)
"""The sizes every dimension a loop could run over (batch, heads, positions) is grown to, one at a time, drawn per
grading: past any fixed length a loop padded under LOOP_CAP covers (`max(H, 8)` is flat from 2 to 8, not to 128)."""


def failed_with_error(ctx: Context, error: dict, doing_zh: str, doing_en: str, *, max_seq_len: int | None = None,
                      extra: tuple = ()) -> Outcome:
    """A probe raised: say what was being done, the exception, and the mistake it points to."""
    error = _root_cause(ctx, error)
    mistakes = diagnosis.from_error(error, ctx.static, max_seq_len=max_seq_len)
    if set(extra) & diagnosis.DEVICE_MISTAKES:  # the caller knows better which device mistake it is
        mistakes = [m for m in mistakes if m not in diagnosis.DEVICE_MISTAKES]
    mistakes += list(extra)
    summary = diagnosis.quoted(error)
    space = " " if doing_zh[-1:].isascii() else ""  # 「运行 forward 时」, 「运行因果 forward 时」
    outcome = failed(f"{doing_zh}{space}时出错：{summary}", f"Error while {doing_en}: {summary}", mistakes,
                     ctx.student.submission.locate(error.get("where")))
    outcome.cause = f"error:{error.get('type')}:{','.join(outcome.mistakes)}"
    outcome.error = summary
    return outcome


def _root_cause(ctx: Context, error: dict) -> dict:
    """A graded name that is missing because its definition failed to load: report that failure."""
    if error.get("type") != "NameError" or not any(
            n in error.get("message", "") for n in ctx.student.submission.exercise.graded_names):
        return error
    if ctx.student.submission.syntax_errors:
        first = ctx.student.submission.syntax_errors[0]
        cell = {"cell": first["cell"] + 1} if ctx.student.submission.is_notebook else {}
        return {"type": first["type"], "message": first["message"],
                "where": {"line": first["line"], "text": first["text"], "function": "<module>", "located": True, **cell}}
    for load_error in ctx.student.load_errors:
        return load_error
    return error


def needs_correct_values(ctx: Context, part: str, outcome: Outcome, own: tuple[str, ...] = ()) -> Outcome:
    """For a check whose verdict compares numbers (float16, gradients, lengths after a round trip):
    when `<part>.values` already failed and this check failed for the same reason (numbers off, or
    the same exception), it says so instead of repeating the diagnosis and its mistake ids. A
    failure naming one of the check's `own` mistakes is its own finding and stays. Checks built on
    their own evidence (shapes, mask, device, loops, gates) never call this."""
    prerequisite = f"{part}.values"
    values = ctx.outcomes.get(prerequisite)
    if outcome.passed or values is None or values.passed or set(own) & set(outcome.mistakes) \
            or outcome.cause not in ("values", "forward", values.cause or "-"):
        return outcome
    if "unsupported-op" in values.mistakes:  # the same operator, met here too: the grader's limit, not a wrong value
        return Outcome(False, f"未检查：评分程序无法运行这段代码的一个算子（算子本身没有问题，见 {prerequisite}）。",
                       f"Not checked: the grader cannot run one of the code's operators (the operator is fine; see "
                       f"{prerequisite}).", cause="cascade")
    return Outcome(False, f"未检查：需要数值正确（见 {prerequisite}）。",
                   f"Not checked: needs correct values (see {prerequisite}).", cause="cascade")


def an_input_is_unread(ctx: Context, part: str) -> bool:
    """`<part>.values` found an input the code never reads (`Q @ Q.mT`, `self.wq(k)`): it has no gradient at all."""
    values = ctx.outcomes.get(f"{part}.values")
    return values is not None and "wrong-input" in values.mistakes


def unread_is_not_cut(ctx: Context, part: str, outcome: Outcome) -> Outcome:
    """A missing gradient of an input the code never reads: unused, not a cut graph; say so, without broken-grad."""
    if "broken-grad" not in outcome.mistakes or not an_input_is_unread(ctx, part):
        return outcome
    return Outcome(False, f"未检查：有个输入没有被读取，所以没有梯度（见 {part}.values）。",
                   f"Not checked: an input the code never reads has no gradient (see {part}.values).", cause="cascade")


def named_backward(ctx: Context, part: str, outcome: Outcome) -> Outcome:
    """Gradients that differ from the reference (or fail gradcheck) where `<part>.values` found the forward right:
    the backward itself is wrong (a hand-written autograd.Function, a hook), `wrong-backward`."""
    values = ctx.outcomes.get(f"{part}.values")
    if outcome.passed or outcome.mistakes or values is None or not values.passed or outcome.cause != "values":
        return outcome
    outcome.mistakes = ["wrong-backward"]
    return outcome


GRADIENT_PROBE_FORWARD = ("梯度检查的前向（训练）", "the forward of the gradient probe (training)")


def wrong_forward(outcome: Outcome) -> Outcome:
    """A gradient probe's own forward, run in training, that differs from the reference: the mistake is the forward's
    (the values check names it), never `wrong-backward`, which `named_backward` gives only to cause "values"."""
    outcome.cause = "forward"
    return outcome


def non_finite(outcome: Outcome, actual: torch.Tensor | None, expected: torch.Tensor) -> Outcome:
    """A failed comparison where the student's numbers hold NaN or inf and the reference's do not says so first:
    a non-finite output is a failure of its own (it poisons everything after it), whatever else explains it."""
    if outcome.passed or actual is None or tuple(actual.shape) != tuple(expected.shape):
        return outcome
    bad = ~torch.isfinite(actual) & torch.isfinite(expected.to(actual.device))
    if bad.any():
        count = int(bad.sum())
        outcome.zh = f"结果中有 {count} 个 NaN 或 inf（参考结果处处有限）。" + outcome.zh
        outcome.en = f"The result holds {count} NaN or inf values where the reference is finite. " + outcome.en
    return outcome


UNIDENTIFIED = ("没有哪种已知错误（单独或组合）能重现这些数值：还有别的错误，评分程序无法指出是哪一种。",
                "No catalogued mistake, alone or combined, reproduces these numbers: something else is wrong that "
                "the grader cannot name.")


def unidentified(outcome: Outcome) -> Outcome:
    """A values failure no mistake explains says so ("also wrong, not identified") instead of naming a guess."""
    if not outcome.passed and not outcome.mistakes:
        outcome.zh, outcome.en = f"{outcome.zh}{UNIDENTIFIED[0]}", f"{outcome.en} {UNIDENTIFIED[1]}"
    return outcome


def first_failure(answer: dict, asked: int, unanswered: str) -> dict | None:
    """A stepped probe's first error (the request's own, or its first failing step's), or one saying `unanswered`
    where fewer steps came back than were asked; None where every step ran."""
    ran = answer.get("steps", [])
    error = answer.get("error") or next((step["error"] for step in ran if "error" in step), None)
    if error is None and len(ran) < asked:
        return {"type": "NoAnswer", "message": unanswered, "where": None}
    return error


def not_checked_without_a_shape(ctx: Context, part: str) -> Outcome:
    """A check that needs one input the code runs on, where it ran on none; where that is because the grader cannot
    run an operator of it (`unsupported-op`), the code did not fail: the limit is the grader's, and it says so."""
    shapes = ctx.outcomes.get(f"{part}.shapes")
    if shapes is not None and "unsupported-op" in shapes.mistakes:
        return Outcome(False, f"未检查：评分程序无法在任何输入形状上运行这段代码的一个算子（算子本身没有问题，见 {part}.shapes）。",
                       f"Not checked: the grader cannot run one of the code's operators on any input shape (the "
                       f"operator is fine; see {part}.shapes).", cause="cascade")
    return Outcome(False, f"未检查：代码在所有输入形状上都出错（见 {part}.shapes）。",
                   f"Not checked: the code fails on every input shape (see {part}.shapes).", cause="cascade")


def named_variant(variant: str | tuple[str, ...] | None, static: dict) -> list[str]:
    """The catalog ids of a wrong reference variant (or a combination of them) the numbers reproduce. No mask
    at all where the text misspells is_causal: the misspelling is why (the flag never reached the code)."""
    names = [] if variant is None else [variant] if isinstance(variant, str) else list(variant)
    mistakes = [reference.MISTAKE_OF.get(name, name) for name in names]
    # a fill of about 0 (-1e-9 for -1e9) gives the numbers of a 0/1 mask multiplied in: the text tells them apart
    if "mask-missing" in static and "mask-multiplied" in mistakes:
        mistakes = ["mask-missing" if m == "mask-multiplied" else m for m in mistakes]
    typo = "is-causal-typo" in static
    return list(dict.fromkeys("is-causal-typo" if m == "mask-missing" and typo else m for m in mistakes))


def nan_from_an_infinity(static: dict, *results: torch.Tensor | None) -> bool:
    """NaN or inf in a result where the text multiplies by an infinity (0 · ∞ = NaN): that product is the finding,
    not whichever wrong variant the NaN places happen to resemble."""
    return "mask-nan" in static and any(r is not None and not bool(torch.isfinite(r).all()) for r in results)


def where_largest(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, tuple]:
    difference = torch.nan_to_num((actual.double() - expected.double()).abs(), nan=float("inf"))
    flat, index = int(difference.argmax()), []
    for size in reversed(difference.shape):  # torch.unravel_index's row-major order, without its first call's import of
        flat, at = divmod(flat, size)  # torch.fx's symbolic shapes (sympy: about 0.35 s of the parent's CPU)
        index.append(at)
    return float(difference.max()), tuple(reversed(index))


def compare_gradients(names: list[str], actual: list[dict | None], expected, tolerance) -> Outcome | None:
    """Student gradients against the reference's: a missing or all-zero one means a cut graph."""
    for name, got, wanted in zip(names, actual, expected):
        if got is None or (float(got["value"].abs().max()) == 0 and float(wanted.abs().max()) > 0):
            return failed(f"梯度没有传到 {name}：计算图被切断了。", f"No gradient reaches {name}: the graph is cut.",
                          ["broken-grad"])
        if not diagnosis.close(got["value"], wanted, *tolerance):
            error, index = where_largest(got["value"], wanted)
            outcome = failed(f"对 {name} 的梯度与参考不符，最大误差 {error:.3g}（位置 {index}）。",
                             f"The gradient for {name} differs from the reference, max error {error:.3g} at {index}.")
            outcome.cause = "values"
            return outcome
    return None


def perturbed(x: torch.Tensor, g: torch.Generator, row: int | None = None) -> torch.Tensor:
    """x with every position (or one) replaced by fresh values."""
    y = x.clone()
    index = (..., slice(None) if row is None else slice(row, row + 1), slice(None))
    y[index] = torch.randn(y[index].shape, generator=g).to(x.dtype)
    return y


def changed(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    """Bit-level difference, NaNs in the same places counting as equal."""
    if a is None or b is None or a.shape != b.shape:
        return True
    return not torch.equal(torch.nan_to_num(a.double(), nan=1e300), torch.nan_to_num(b.double(), nan=1e300))


def resource_failure(outcome: Outcome) -> bool:
    """Out of time or memory, the process ended, or the judge ended by the graph: trying other inputs only burns the
    budget."""
    return bool({"timeout", "memory-limit", "tampering", "submission-too-costly"} & set(outcome.mistakes))


def device_sweep(ctx: Context, cases: list[tuple[str, object]], run: Callable[[object, str], tuple[dict | None, dict]],
                 mistake: Callable[[object, dict], str], agrees_on_cuda: Callable[[object, torch.Tensor], Outcome | None]) -> Outcome:
    """Each case (label, case) on every device the machine offers; two stand-ins for a GPU, the meta device and a
    FakeTensor on "cuda" (`STAND_INS`), everywhere, each held to the same verdict. `run(case, device)` -> (error, the output's description). A device mismatch
    names `mistake(case, error)`; an output left on another device is `hardcoded-device`; on a real GPU
    the output must agree with the same code's CPU output (`agrees_on_cuda`), and on the stand-in too where the
    parent knows every value of the graph (a GPU branch that returns zeros). Any other error says nothing about
    devices: inconclusive on that device, never a failure, and never a pass either. Last, the CPU of a machine with
    a GPU (`CPU_BESIDE_A_GPU`): a fixed "cuda" there is `hardcoded-device`. The points come only from a case that
    ran on a GPU or a stand-in and met the question there. A case no device could judge awards nothing and
    names `device-not-judged`, which the class summary lists for review by hand. Values are not otherwise this
    check's business."""
    notes_zh, notes_en = [], []
    judged: set[str] = set()
    inconclusive: dict[str, dict[str, str]] = {}  # label -> where -> the type of an error that says nothing of devices
    for where in (["cuda"] if ctx.cuda else []) + list(STAND_INS) + [CPU_BESIDE_A_GPU]:
        for label, case in cases:
            error, out = run(case, where)
            no_cuda = where in ("cuda", CPU_BESIDE_A_GPU) and error and diagnosis.NO_CUDA.search(error.get("message", ""))
            if error and (diagnosis.is_device_mismatch(error, ctx.static) or no_cuda):
                return failed_with_error(ctx, error, f"在 {where} 设备上运行（{label}）", f"running on device {where} ({label})",
                                         extra=(mistake(case, error),))
            if error:
                notes_zh.append(f"{where} 上的检查无定论（{error['type']}）")
                notes_en.append(f"inconclusive on {where} ({error['type']})")
                inconclusive.setdefault(label, {})[where] = error["type"]
                continue
            if out.get("device") != ("cpu" if where == CPU_BESIDE_A_GPU else where):
                return failed(f"在 {where} 上运行（{label}），输出却在 {out.get('device')} 上。",
                              f"Run on {where} ({label}), but the output is on {out.get('device')}.", ["hardcoded-device"])
            problem = agrees_on_cuda(case, out.get("value")) if where == "cuda" else None
            if problem:
                return problem
            if where in STAND_INS and out.get("value") is not None and agrees_on_cuda(case, out["value"]):
                return failed(f"在代替 GPU 的 {where} 设备上（{label}），输出与同一段代码在 CPU 上的输出不同："
                              "代码在 GPU 上做的是另一件事。", f"On the {where} device that stands in for a GPU ({label}), "
                              "the output differs from the same code's output on the CPU: on a GPU the code does "
                              "something else.", ["device-probing"])
            if where != CPU_BESIDE_A_GPU:  # a CPU run shows that the code follows the module, not that it runs on a GPU
                judged.add(label)
    unjudged = [label for label, _ in cases if label not in judged]
    cascades = [fails_on_the_cpu_too(inconclusive.get(label, {}), lambda case=case: run(case, "cpu")[0])
                for label, case in cases if label in unjudged]
    if unjudged and all(cascades):
        return cascades[0]
    if unjudged:
        return failed(f"没有一个代替 GPU 的设备能评判这段代码（{'；'.join(notes_zh)}），无法判断它在 GPU 上能否运行"
                      f"（{', '.join(unjudged)}）：请老师人工复核，或在有 GPU 的机器上评分。",
                      f"No device that stands in for a GPU could judge the code ({'; '.join(notes_en)}), so whether "
                      f"it runs on a GPU could not be judged ({', '.join(unjudged)}): could not be judged on the GPU "
                      "stand-ins: review by hand, or grade on a GPU.", ["device-not-judged"])
    return passed("；".join(notes_zh) or "输入在哪个设备，计算就在哪个设备。",
                  "; ".join(notes_en) or "Everything runs on the device of its inputs and module.")


def same_on_cuda(cpu: torch.Tensor | None, cuda: torch.Tensor | None, tolerance: tuple[float, float]) -> Outcome | None:
    """The GPU's output against the same code's CPU output on the same inputs."""
    if cpu is None or diagnosis.close(cuda, cpu, *tolerance):
        return None
    return failed("在 CUDA 上的输出与同一段代码在 CPU 上的输出不同。",
                  "On CUDA the output differs from the same code's output on the CPU.")


def loop_stages(ctx: Context, label: str, base: dict[str, range]) -> list[list[dict[str, int]]]:
    """The sizes the op count is taken at, in stages, drawn per grading (`Context.sizes`), so code cannot vectorise
    at the grader's shapes alone: the base, one size from each of `base`'s ranges; each dimension grown a little
    (by one of LOOP_STEP), one at a time (a plain loop shows here, before a large size makes it record thousands
    of nodes); then each grown to one of LOOP_GROWN (a loop padded to a fixed length shows there)."""
    names = list(base)
    drawn = iter(ctx.sizes(label, *base.values(), *(LOOP_STEP for _ in names), *(LOOP_GROWN for _ in names)))
    start = {name: next(drawn) for name in names}
    small = {name: start[name] + next(drawn) for name in names}
    return [[dict(start)], [{**start, name: small[name]} for name in names],
            [{**start, name: next(drawn)} for name in names]]


def counted_loops(stages: list[list], count: Callable[[object], int | Outcome], label: Callable[[object], str]) -> Outcome:
    """`count(sizes)` at each stage's sizes (an Outcome: the probe failed, and that is the verdict), judged after
    each stage: a loop seen at small sizes is never run at large ones. The first sizes are the base."""
    counts: dict[str, int] = {}
    verdict = passed()
    for stage in stages:
        for sizes in stage:
            counted = count(sizes)
            if isinstance(counted, Outcome):
                return counted
            counts[label(sizes)] = counted
        verdict = loop_verdict(counts, next(iter(counts)), LOOP_CAP)
        if not verdict.passed:
            return verdict
    return verdict


def loop_verdict(counts: dict[str, int], base: str, cap: int | None = None) -> Outcome:
    """Ops dispatched per call for a base shape and shapes with more batch, heads or positions.

    A few ops of difference are legitimate (a view here, a copy there); a Python loop over the
    grown dimension adds at least one op per extra iteration, many more than LOOP_MARGIN, and one run only below a
    size takes as many away past it. `cap`: more
    ops than this at the base shape is a loop too, one run to a fixed length on empty slices past
    the real size (its count is flat up to that length; under the cap, a probe past it grows).
    """
    listing = ", ".join(f"{shape}: {n}" for shape, n in counts.items())
    if cap is not None and counts[base] > cap:
        return failed(f"最小的形状（{base}）上就执行了 {counts[base]} 个张量算子，注意力用不了这么多（上限 {cap}）："
                      f"Python 循环，哪怕循环到固定的长度。",
                      f"At the smallest shape ({base}) the code already dispatches {counts[base]} tensor ops, more than "
                      f"attention ever needs (at most {cap}): a Python loop, even one run to a fixed length.",
                      ["python-loop"])
    # either way: a loop run only below some size makes the count fall as the shape grows past it
    changed = [shape for shape, n in counts.items() if abs(n - counts[base]) >= LOOP_MARGIN]
    if changed:
        return failed(f"张量算子的数量随形状变化（{listing}），说明在 Python 里循环了（哪怕只在某些形状上循环）。",
                      f"The number of tensor ops changes with the shape ({listing}): a Python loop (even one run "
                      "only at some shapes).", ["python-loop"])
    return passed(f"算子数量与形状无关（{listing}）。", f"The op count does not grow with the shape ({listing}).")
