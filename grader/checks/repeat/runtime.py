"""Part 1, how repeat_kv runs: on the input's device, without a Python loop over heads, within the rules.

The device and loop probes judge only devices and op counts, so a wrong value elsewhere never hides these findings;
their sizes are drawn per grading (`Context.sizes`), so no code meets them by naming the grader's shapes.
"""
from __future__ import annotations

from grader.checks import diagnosis, Context, Outcome, check
from grader.checks.common import (TOLERANCE, counted_loops, device_sweep, failed_with_error, loop_stages,
                                  not_checked_without_a_shape, same_on_cuda)
from grader.checks.gates import register as register_gates
from grader.checks.regimes import SPREAD_LAYOUTS, combinations
from grader.checks.repeat.probing import call, keys, output, request, runs_somewhere, value
from grader.graph.answers import same_values
from grader.sandbox.requests import Probe


@check("repeat.device", part="repeat", points=0.5, visibility="hidden",
       title_zh="在 GPU 上也能运行（输出跟随输入的设备）", title_en="runs on the GPU (the output follows the input's device)")
def device(ctx: Context) -> Outcome:
    if not runs_somewhere(ctx):
        return not_checked_without_a_shape(ctx, "repeat")
    # sizes drawn per grading: never as many positions as input heads, so code cannot follow the device at one shape alone
    B, H_kv, T, d, n_rep = ctx.sizes("repeat.device", range(2, 5), range(2, 5), range(6, 10), range(2, 13), range(2, 5))
    x = keys(ctx, B, H_kv, T, d, 260)

    def run(layout: str, where: str):
        # in training (the meta stand-in, a GPU); the FakeTensor stand-in takes the inference regime (checks.regimes)
        answer = ctx.student.call(Probe.REPEAT, request(x, n_rep, device=where, layout=layout, regime="training"))
        return answer.get("error"), (answer.get("outputs") or [{}])[0]

    def agrees_on_cuda(layout: str, on_gpu):
        answer, problem = call(ctx, x, n_rep, layout=layout, regime="training")
        return None if problem else same_on_cuda(value(answer), on_gpu, TOLERANCE[x.dtype])

    cases = [(f"x{tuple(x.shape)}, n_rep={n_rep}, layout={layout}", layout) for layout in SPREAD_LAYOUTS]
    return device_sweep(ctx, cases, run, lambda _, error: diagnosis.device_mistake(ctx.static, error=error),
                        agrees_on_cuda)


@check("repeat.vectorized", part="repeat", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐 batch/逐位置的 Python 循环", title_en="no Python loop over heads, batch or positions")
def vectorized(ctx: Context) -> Outcome:
    if not runs_somewhere(ctx):
        return not_checked_without_a_shape(ctx, "repeat")
    # the key/value heads, the batch and the positions grown one at a time (common.loop_stages); a loop over the
    # query heads (H_kv * n_rep of them) grows with H_kv. n_rep stays: `[x] * n_rep` copies are no loop over heads
    stages = loop_stages(ctx, "repeat.vectorized", {"H_kv": range(2, 5), "B": range(2, 5), "T": range(5, 8)})
    d, n_rep = ctx.sizes("repeat.vectorized sizes", range(2, 13), range(2, 5))
    labels = {tuple(sizes.values()): "×".join(f"{name}={size}" for name, size in sizes.items())
              for stage in stages for sizes in stage}
    seeds = {sizes: seed for seed, sizes in enumerate(labels, start=270)}
    combos = dict(zip(labels, combinations(ctx, "repeat.vectorized", len(labels))))  # every layout and regime

    def count(sizes: dict) -> int | Outcome:
        key = tuple(sizes.values())
        x = keys(ctx, sizes["B"], sizes["H_kv"], sizes["T"], d, seeds[key])
        layout, regime = combos[key]
        one = request(x, n_rep, count_ops=True, layout=layout, regime=regime)
        answers = ctx.student.call_many(Probe.REPEAT, [one, one])  # the second: what the first cached is no loop
        for answer in answers:
            if "error" in answer:  # ops are counted whatever the values; only a crash stops the count
                return failed_with_error(ctx, answer["error"], f"统计算子（{labels[key]}）", f"counting ops ({labels[key]})")
        first, second = answers
        # ... unless the second replays a result remembered from the first (other values here): the first is counted
        return second["ops"] if same_values(output(first), output(second)) else max(first["ops"], second["ops"])

    return counted_loops(stages, count, lambda sizes: labels[tuple(sizes.values())])


register_gates("repeat", "不调用内置注意力（F.scaled_dot_product_attention）",
               "no built-in attention (F.scaled_dot_product_attention)")
