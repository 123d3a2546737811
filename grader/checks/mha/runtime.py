"""Part 2, how it runs: after model.to(device) on that device, without Python loops, by hand,
within the rules.

The device and loop probes judge only devices and op counts, once the module runs on a configuration
it is promised (from the shape probe), so a wrong value or a wrong shape elsewhere never hides them;
their sizes are drawn per grading (`Context.sizes`), so no code meets them by naming the grader's shapes.
"""
from __future__ import annotations

from grader.checks import diagnosis, Context, Outcome, check
from grader.checks.common import (MODULE_TOLERANCE, counted_loops, device_sweep, failed_with_error,
                                  loop_stages, not_checked_without_a_shape, same_on_cuda)
from grader.checks.gates import register as register_gates
from grader.checks.regimes import regimes
from grader.checks.mha.probing import accepted_config, first_error, inputs, linear_weights, model_args, out_tensor
from grader.sandbox.requests import MhaInterfaceRequest, MhaRequest, Probe


@check("mha.device", part="mha", points=1, visibility="hidden",
       title_zh="model.to(device) 后在该设备上运行（掩码随模块移动）",
       title_en="after model.to(device) it runs there (the mask moves with the module)")
def device(ctx: Context) -> Outcome:
    config = accepted_config(ctx)
    if config is None:
        return not_checked_without_a_shape(ctx, "mha")
    # sizes drawn per grading, written nowhere: no code follows the module's device at the grader's shape alone
    B, heads, head_dim, T, room = ctx.sizes("mha.device", range(2, 5), range(2, 5), range(2, 9), range(5, 10), range(1, 8))
    # as the accepted shape has it: room to spare when the module took some, none when it runs only at max_seq_len
    # (an unsliced mask), so what the draw picks never decides whether the device question can be asked
    dim, max_len = heads * head_dim, T + (room if config[4] > config[1] else 0)
    weights, call, args = linear_weights(ctx, dim, 170), inputs(ctx, B, T, dim, 171), model_args(dim, heads, max_len)
    training = dict(call, regime="training")
    made_by_a_call: list[str] = []

    def run(is_causal: bool, where: str):
        # in training (the meta stand-in, a GPU); the FakeTensor stand-in computes no gradients and takes the
        # inference regime, so each case meets both (checks.regimes)
        answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=is_causal, calls=[training], weights=weights,
                                                        device=where))
        # after a call on the CPU and the move (a mask made at the first call is left behind there)
        made_by_a_call[:] = answer.get("made_by_a_call") or []
        return first_error(answer), (answer.get("calls") or [{}])[0].get("out", {})

    def mistake(is_causal: bool, error: dict) -> str:
        interface = ctx.student.call(Probe.MHA_INTERFACE, MhaInterfaceRequest(args=args, is_causal=is_causal))
        return diagnosis.device_mistake(ctx.static, interface.get("plain_tensor_attributes", []), error, made_by_a_call)

    def agrees_on_cuda(is_causal: bool, value):
        answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=is_causal, calls=[training], weights=weights))
        cpu = None if first_error(answer) else out_tensor(answer["calls"][0])
        return same_on_cuda(cpu, value, MODULE_TOLERANCE[call["q"].dtype])

    label = f"B={B}, T={T}, dim={dim}, n_heads={heads}"
    cases = [(f"{label}, is_causal={is_causal}", is_causal) for is_causal in (True, False)]
    return device_sweep(ctx, cases, run, mistake, agrees_on_cuda)


@check("mha.vectorized", part="mha", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐位置/逐 batch 的 Python 循环", title_en="no Python loop over heads, positions or batch")
def vectorized(ctx: Context) -> Outcome:
    # the batch starts at 2: nn.Linear itself dispatches differently for B = 1; head_dim >= 2 (no size-1 dim to squeeze)
    stages = loop_stages(ctx, "mha.vectorized", {"B": range(2, 5), "H": range(2, 5), "T": range(5, 8)})
    head_dim, = ctx.sizes("mha.vectorized head_dim", range(2, 5))
    max_len = max(sizes["T"] for stage in stages for sizes in stage)
    labels = {tuple(sizes.values()): "B={B},H={H},T={T}".format(**sizes) for stage in stages for sizes in stage}
    seeds = {key: seed for seed, key in enumerate(labels, start=180)}
    # each size's calls in one regime, the two taking turns over the sizes (checks.regimes): a loop run only for
    # inputs handed over one way changes the count either way
    chosen = dict(zip(labels, regimes(ctx, "mha.vectorized", [None] * len(labels))))

    def count(sizes: dict) -> int | Outcome:
        B, H, T = sizes["B"], sizes["H"], sizes["T"]
        seed, dim = seeds[B, H, T], H * head_dim
        call = dict(inputs(ctx, B, T, dim, seed), regime=chosen[B, H, T])
        answer = ctx.student.call(Probe.MHA, MhaRequest(args=model_args(dim, H, max_len), is_causal=True,
                                                        calls=[call, call], count_ops=True,
                                                        weights=linear_weights(ctx, dim, seed)))
        error = first_error(answer)
        if error:  # ops are counted whatever the values; only a crash stops the count
            return failed_with_error(ctx, error, f"统计算子（B={B}, H={H}, T={T}）", f"counting ops (B={B}, H={H}, T={T})",
                                     max_seq_len=max_len)
        return answer["calls"][1]["ops"]  # the second call: a mask cached on the first is no loop

    return counted_loops(stages, count, lambda sizes: labels[tuple(sizes.values())])


register_gates("mha", "自己实现注意力（不用 nn.MultiheadAttention / F.scaled_dot_product_attention）",
               "attention implemented by hand (no nn.MultiheadAttention / F.scaled_dot_product_attention)")
