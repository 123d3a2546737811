"""Part 1, how it runs: on the input's device, without Python loops, by hand, within the rules.

The device and loop probes judge only devices and op counts, at the rank the code accepts (from the
shape probe), so a wrong value or a wrong shape elsewhere never hides these findings; their sizes are
drawn per grading (`Context.sizes`), so no code meets them by naming the grader's shapes.
"""
from __future__ import annotations

from grader.checks import diagnosis, Context, Outcome, check
from grader.checks.common import (TOLERANCE, counted_loops, device_sweep, failed_with_error, loop_stages,
                                  not_checked_without_a_shape, same_on_cuda)
from grader.checks.gates import register as register_gates
from grader.checks.regimes import SPREAD_LAYOUTS, combinations
from grader.checks.sdpa.probing import accepted_shape, call, qkv, tensor
from grader.graph.answers import same_values
from grader.sandbox.requests import Probe, SdpaRequest


@check("sdpa.device", part="sdpa", points=0.5, visibility="hidden",
       title_zh="在 GPU 上也能运行（掩码跟随输入的设备）", title_en="runs on the GPU (the mask follows the input's device)")
def device(ctx: Context) -> Outcome:
    shape = accepted_shape(ctx)
    if shape is None:
        return not_checked_without_a_shape(ctx, "sdpa")
    # the accepted rank at sizes drawn per grading: leading dims from 2 to 5, T from 6 to 9 (never as many positions
    # as heads), widths from 2 to 12, so code cannot follow the input's device at the grader's shape alone
    *batch, T, d_k, d_v = ctx.sizes("sdpa.device", *(range(2, 6) for _ in shape[0]), range(6, 10), range(2, 13),
                                    range(2, 13))
    Q, K, V = qkv(ctx, batch, T, d_k, d_v, 60)

    def run(layout: str, where: str):
        # the default flag: a misspelled is_causal parameter must not hide the device finding. In training (the meta
        # stand-in, a GPU); the FakeTensor stand-in computes no gradients and takes the inference regime, so each
        # layout meets both (checks.regimes)
        answer = ctx.student.call(Probe.SDPA, SdpaRequest(Q=Q, K=K, V=V, device=where, layout=layout,
                                                          regime="training"))
        return answer.get("error"), answer.get("out", {})

    def agrees_on_cuda(layout: str, value):
        answer, problem = call(ctx, Q, K, V, layout=layout, regime="training")
        return None if problem else same_on_cuda(tensor(answer, "out"), value, TOLERANCE[Q.dtype])

    cases = [(f"Q{tuple(Q.shape)}, layout={layout}", layout) for layout in SPREAD_LAYOUTS]
    return device_sweep(ctx, cases, run, lambda _, error: diagnosis.device_mistake(ctx.static, error=error),
                        agrees_on_cuda)


def loop_shapes(ctx: Context, leading: int) -> list[list[tuple[tuple, int]]]:
    """(leading dims, T) for the op count, in the stages of `common.loop_stages`: a base, then each leading dim
    (batch, heads, any other) and T grown one at a time, as far as the accepted rank has them; drawn per grading,
    each leading dim from 2 to 4 and T from 5 to 7 (never a size-1 dim, never as many positions as heads)."""
    names = [f"dim{i}" for i in range(leading)]
    stages = loop_stages(ctx, "sdpa.vectorized", {**{name: range(2, 5) for name in names}, "T": range(5, 8)})
    return [[(tuple(sizes[name] for name in names), sizes["T"]) for sizes in stage] for stage in stages]


@check("sdpa.vectorized", part="sdpa", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐位置/逐 batch 的 Python 循环", title_en="no Python loop over heads, positions or batch")
def vectorized(ctx: Context) -> Outcome:
    shape = accepted_shape(ctx)
    if shape is None:
        return not_checked_without_a_shape(ctx, "sdpa")
    stages = loop_shapes(ctx, len(shape[0]))
    d_k, d_v = ctx.sizes("sdpa.vectorized widths", range(2, 13), range(2, 13))
    labels = {(batch, T): "×".join(map(str, (*batch, T))) for stage in stages for batch, T in stage}
    seeds = {shape: seed for seed, shape in enumerate(labels, start=70)}

    # each size in one layout and regime, every pair of them among the sizes (checks.regimes): a loop run only for
    # inputs handed over one way changes the count either way
    combos = dict(zip(labels, combinations(ctx, "sdpa.vectorized", len(labels))))

    def count(sizes: tuple) -> int | Outcome:
        batch, T = sizes
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seeds[batch, T])
        layout, regime = combos[batch, T]
        request = SdpaRequest(Q=Q, K=K, V=V, is_causal=None, count_ops=True, layout=layout, regime=regime)
        answers = ctx.student.call_many(Probe.SDPA, [request, request])  # the second: a mask cached on the first is no loop
        for answer in answers:
            if "error" in answer:  # ops are counted whatever the values; only a crash stops the count
                label = labels[batch, T]
                return failed_with_error(ctx, answer["error"], f"统计算子（{label}）", f"counting ops ({label})")
        first, second = answers
        # ... unless the second replays a result remembered from the first (other values here): the first is counted
        return second["ops"] if same_values(first.get("out"), second.get("out")) else max(first["ops"], second["ops"])

    return counted_loops(stages, count, labels.get)


register_gates("sdpa", "自己实现注意力（不调用 F.scaled_dot_product_attention）",
               "attention implemented by hand (no F.scaled_dot_product_attention)")
