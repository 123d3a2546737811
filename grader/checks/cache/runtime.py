"""Part 2, how KVCache runs: its buffers on the device it was given, update without a Python loop over batch rows or
positions, within the rules.

The device is judged from the constructor's own graph (where each buffer lies there), on a GPU where the machine has
one and on both stand-ins for one everywhere; sizes are drawn per grading (`Context.sizes`).
"""
from __future__ import annotations

import torch

from grader.checks import Context, Outcome, check, diagnosis, failed, passed
from grader.checks.cache.probing import Plan, expected_chain, request, runs_somewhere, step_words, value
from grader.checks.common import (TOLERANCE, counted_loops, failed_with_error, first_failure, loop_stages,
                                  not_checked_without_a_shape)
from grader.checks.device_questions import fails_on_the_cpu_too
from grader.checks.gates import register as register_gates
from grader.graph.devices import CPU_BESIDE_A_GPU, STAND_INS
from grader.sandbox.requests import Probe


def _on(ctx: Context, plan: Plan, where: str) -> Outcome | dict | None:
    """The chain on `where`: None where it met the question there (buffers and returns on the device asked for),
    an Outcome where it failed it, and an inconclusive run's error otherwise."""
    answer = ctx.student.call(Probe.CACHE, request(ctx, plan, device=where))
    asked = "cpu" if where == CPU_BESIDE_A_GPU else where
    label_zh, label_en = plan.label()
    if "buffers" not in answer:
        error = answer.get("error") or {}
        if where in ("cuda", CPU_BESIDE_A_GPU) and diagnosis.NO_CUDA.search(error.get("message", "")):
            return failed_with_error(ctx, error, f"在 {where} 上构造 KVCache（{label_zh}）",
                                     f"building KVCache on {where} ({label_en})", extra=("hardcoded-device",))
        return error
    for name, item in zip(("cache_k", "cache_v"), answer["buffers"]):
        if item.get("device") != asked:
            stand_in_zh = "，代替 GPU 的设备" if where in STAND_INS else ""
            stand_in_en = ", the device standing in for a GPU" if where in STAND_INS else ""
            return failed(f"KVCache(..., device=<{asked}{stand_in_zh}>)（{label_zh}）建出的 {name} 在 {item.get('device')} "
                          "上：没有用传入的 device，模型在 GPU 上时，写入和读取缓存都会因设备不一致而出错。",
                          f"KVCache(..., device=<{asked}{stand_in_en}>) ({label_en}) made {name} on "
                          f"{item.get('device')}: the device it was given is ignored, so with the model on a GPU every "
                          "write and read of the cache mixes devices.",
                          ["hardcoded-device" if where == CPU_BESIDE_A_GPU else "cache-device"])
    expected = expected_chain(ctx, plan)
    for number, step in enumerate(answer.get("steps", [])):
        zh, en = step_words(plan, number)
        if "error" in step:
            error = step["error"]
            if diagnosis.is_device_mismatch(error, ctx.static):
                # update holds no mask: what strays there is a tensor it made without device= (an index, a constant),
                # whatever the text's findings say of the module's masks (a plain class's buffers read as one)
                made_there = "hardcoded-device" if "hardcoded-device" in ctx.static else "constant-device"
                return failed_with_error(ctx, error, f"在 {where} 上{zh}（{label_zh}）", f"{en} on {where} ({label_en})",
                                         extra=(made_there,))
            return error
        for name in ("keys", "values"):
            item = step.get(name) or {}
            if item.get("device") != asked:
                return failed(f"{zh} 在 {where} 上（{label_zh}）返回的 {name} 在 {item.get('device')} 上。",
                              f"{en} on {where} ({label_en}) returned {name} on {item.get('device')}.",
                              ["hardcoded-device"])
        start, length = plan.steps[number]
        want = expected[number][0][:plan.batch, :, :start + length]
        if where == "cuda" and not diagnosis.close(value(step.get("keys")), want, *TOLERANCE[plan.dtype]):
            return failed(f"{zh} 在 CUDA 上（{label_zh}）返回的 keys 与参考不同。",
                          f"{en} on CUDA ({label_en}) returned keys that differ from the reference.")
    return None


@check("cache.device", part="cache", points=1, visibility="hidden",
       title_zh="缓冲区建在传入的 device 上（在 GPU 上也能运行）",
       title_en="the buffers live on the device given (runs on the GPU)")
def device(ctx: Context) -> Outcome:
    if not runs_somewhere(ctx):
        return not_checked_without_a_shape(ctx, "cache")
    # B = max_batch - 1 from 2 up: a write of every row (`cache_k[:, :, ...] = k`) fails there wherever it runs, which
    # the device question names as that failure (a B of 1 broadcast into every row and passed, in a third of gradings)
    max_batch, heads, width, length, prompt = ctx.sizes("cache.device", range(3, 6), range(1, 4), range(2, 13),
                                                        range(8, 13), range(2, 6))
    plan = Plan(max_batch, length, heads, width, max_batch - 1, torch.float32, ((0, prompt), (prompt, 1)), 360)
    notes_zh, notes_en, judged, inconclusive = [], [], False, {}
    for where in (["cuda"] if ctx.cuda else []) + list(STAND_INS) + [CPU_BESIDE_A_GPU]:
        verdict = _on(ctx, plan, where)
        if isinstance(verdict, Outcome):
            return verdict
        if isinstance(verdict, dict):  # an error that says nothing about devices: no verdict there, either way
            verdict = verdict.get("type", "error")
            notes_zh.append(f"{where} 上的检查无定论（{verdict}）")
            notes_en.append(f"inconclusive on {where} ({verdict})")
            inconclusive[where] = verdict
        elif where != CPU_BESIDE_A_GPU:  # the CPU beside a GPU shows that the code follows device=, not a GPU
            judged = True

    def error_on_the_cpu() -> dict | None:  # the plain CPU at the same sizes: the code may fail there too
        verdict = _on(ctx, plan, "cpu")
        return verdict if isinstance(verdict, dict) else None

    if not judged and (cascade := fails_on_the_cpu_too(inconclusive, error_on_the_cpu)):
        return cascade
    if not judged:
        return failed(f"没有一个代替 GPU 的设备能评判这段代码（{'；'.join(notes_zh)}）：请老师人工复核，或在有 GPU 的机器上评分。",
                      f"No device that stands in for a GPU could judge the code ({'; '.join(notes_en)}): review by "
                      "hand, or grade on a GPU.", ["device-not-judged"])
    return passed("；".join(notes_zh) or "缓冲区建在传入的 device 上，update 返回的键和值也在那里。",
                  "; ".join(notes_en) or "The buffers live on the device given, and so do the keys and values update "
                                         "returns.")


@check("cache.vectorized", part="cache", points=0.5, visibility="hidden",
       title_zh="update 没有逐 batch 行/逐位置的 Python 循环", title_en="update has no Python loop over batch rows or positions")
def vectorized(ctx: Context) -> Outcome:
    if not runs_somewhere(ctx):
        return not_checked_without_a_shape(ctx, "cache")
    # two updates of T positions into B rows of a cache one row larger, at start_pos 0 and then 1, B and T grown one at a
    # time: a write made one row or one position at a time dispatches a copy per row or position, whichever update
    # and batch it loops at (red team on the second lab: a loop only at start_pos 0, or only below max_batch_size)
    stages = loop_stages(ctx, "cache.vectorized", {"B": range(1, 4), "T": range(2, 6)})
    heads, width = ctx.sizes("cache.vectorized sizes", range(1, 4), range(2, 9))

    def count(sizes: dict) -> int | Outcome:
        B, T = sizes["B"], sizes["T"]
        plan = Plan(B + 1, T + 2, heads, width, B, torch.float32, ((0, T), (1, T)), 380)
        answer = ctx.student.call(Probe.CACHE, request(ctx, plan, count_ops=True))
        # ops are counted whatever the values; only a crash, or an update that gave no answer, stops the count
        error = first_failure(answer, len(plan.steps), "update gave no answer")
        if error:
            return failed_with_error(ctx, error, f"统计算子（B={B}×T={T}）", f"counting ops (B={B}×T={T})")
        return sum(step["ops"] for step in answer["steps"])

    return counted_loops(stages, count, lambda sizes: f"B={sizes['B']}×T={sizes['T']}")


register_gates("cache", "不调用内置注意力（F.scaled_dot_product_attention）",
               "no built-in attention (F.scaled_dot_product_attention)")
