"""Part 3, how the whole prompt's pass runs: after model.to(device) on that device, without a Python loop over heads,
positions or the batch, within the rules.

The device and loop probes judge only devices and op counts, once the module runs on a promised configuration (from
the shape probe), so a wrong value elsewhere never hides them; their sizes are drawn per grading (`Context.sizes`).
"""
from __future__ import annotations

from grader.checks import Context, Outcome, check, diagnosis
from grader.checks.common import (MODULE_TOLERANCE, counted_loops, device_sweep, failed_with_error, first_failure,
                                  loop_stages, not_checked_without_a_shape, same_on_cuda)
from grader.checks.gates import register as register_gates
from grader.checks.gqa.decoding import inputs as decoding_inputs, request as decode_request
from grader.checks.gqa.probing import (accepted_config, groups_drawn, linear_weights, model_args, out_tensor, prompt,
                                      request, run)
from grader.checks.regimes import regimes
from grader.graph.answers import same_values
from grader.sandbox.requests import Probe


@check("gqa.device", part="gqa", points=1, visibility="hidden",
       title_zh="model.to(device) 后在该设备上运行（掩码跟随输入的设备）",
       title_en="after model.to(device) it runs there (the mask follows the input's device)")
def device(ctx: Context) -> Outcome:
    accepted = accepted_config(ctx)
    if accepted is None:
        return not_checked_without_a_shape(ctx, "gqa")
    # sizes drawn per grading, written nowhere: never as many positions as key/value heads
    B, n_kv_heads, head_dim, T = ctx.sizes("gqa.device", range(2, 5), range(1, 4), range(2, 7), range(5, 10))
    n_heads = n_kv_heads * groups_drawn(ctx, "gqa.device groups", accepted)
    config = (B, T, n_heads * head_dim, n_heads, n_kv_heads, T + 3, B)
    args = model_args(*config)
    weights, x = linear_weights(ctx, args, 360), prompt(ctx, B, T, config[2], 361)

    plain_attributes: list[str] = []
    made_by_a_call: list[str] = []
    # the cached path too: a prompt, then one token, through caches on the module's device (red team on the second lab:
    # a mask made without device= only where a cache is given kept this point)
    steps = [[0, 0, T], [0, T, 1]]
    decode_weights, whole = decoding_inputs(ctx, args, B, steps, 362)

    def on(where: str, case):
        if case == "decode":
            return decoded_on(where)
        # in training (the meta stand-in, a GPU); the FakeTensor stand-in computes no gradients and takes inference
        answer = ctx.student.call(Probe.GQA, request(args, x, weights, device=where, regime="training"))
        plain_attributes[:] = answer.get("plain_tensor_attributes") or []
        made_by_a_call[:] = answer.get("made_by_a_call") or []
        return answer.get("error"), answer.get("out", {})

    def decoded_on(where: str):
        answer = ctx.student.call(Probe.DECODE, decode_request(args, steps, whole, decode_weights, device=where))
        error = first_failure(answer, len(steps), UNANSWERED)
        last = answer["steps"][-1] if error is None else {}
        # the values only from a GPU (held to the CPU's below): on a stand-in only devices are read
        return error, {"device": last.get("device"), "value": last.get("out") if where == "cuda" else None}

    def mistake(_case, error: dict) -> str:
        # the module's own attributes say whether a mask is no buffer; the text's finding may be the cache's tensors
        # (a KVCache is an honest plain class), so it is not read here
        static = {name: places for name, places in ctx.static.items() if name != "mask-not-buffer"}
        return diagnosis.device_mistake(static, plain_attributes, error, made_by_a_call)

    def agrees_on_cuda(case, value):
        if case == "decode":
            ran = ctx.student.call(Probe.DECODE, decode_request(args, steps, whole, decode_weights)).get("steps", [])
            cpu = ran[-1].get("out") if len(ran) == len(steps) else None
            return same_on_cuda(cpu, value, MODULE_TOLERANCE[x.dtype])
        answer, problem = run(ctx, config, x, weights, regime="training")
        return None if problem else same_on_cuda(out_tensor(answer), value, MODULE_TOLERANCE[x.dtype])

    label = f"B={B}, T={T}, dim={config[2]}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"
    cases = [(label, None), (f"{label}, KV cache: start_pos=0, T={T}; start_pos={T}, T=1", "decode")]
    return device_sweep(ctx, cases, lambda case, where: on(where, case), mistake, agrees_on_cuda)


@check("gqa.vectorized", part="gqa", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐位置/逐 batch 的 Python 循环", title_en="no Python loop over heads, positions or batch")
def vectorized(ctx: Context) -> Outcome:
    accepted = accepted_config(ctx)
    if accepted is None:
        return not_checked_without_a_shape(ctx, "gqa")
    # the batch, the key/value heads (and with them the n_rep times as many query heads) and the positions grown one at
    # a time (common.loop_stages); n_rep stays: `[k] * n_rep` copies are no loop over heads. Heads of width 2: grown to
    # LOOP_GROWN key/value heads, the model is at most 144 * 3 * 2 wide, its four weights under 10 MB
    stages = loop_stages(ctx, "gqa.vectorized", {"B": range(2, 5), "H_kv": range(2, 5), "T": range(5, 8)})
    head_dim = 2
    n_rep = groups_drawn(ctx, "gqa.vectorized groups", accepted)
    every = [sizes for stage in stages for sizes in stage]
    max_len = max(s["T"] for s in every)
    labels = {tuple(sizes.values()): "B={B},H_kv={H_kv},T={T}".format(**sizes) for sizes in every}
    seeds = {key: seed for seed, key in enumerate(labels, start=380)}
    chosen = dict(zip(labels, regimes(ctx, "gqa.vectorized", [None] * len(labels))))

    def count(sizes: dict) -> int | Outcome:
        key = tuple(sizes.values())
        B, H_kv, T = key
        n_heads = H_kv * n_rep
        # max_batch_size B: what a module preallocates for the batch stays small at the grown sizes
        config = (B, T, n_heads * head_dim, n_heads, H_kv, max_len, B)
        args = model_args(*config)
        one = request(args, prompt(ctx, B, T, config[2], seeds[key]), linear_weights(ctx, args, seeds[key] + 500),
                      count_ops=True, regime=chosen[key])
        answers = ctx.student.call_many(Probe.GQA, [one, one])  # the second: what the first cached is no loop
        for answer in answers:
            if "error" in answer:  # ops are counted whatever the values; only a crash stops the count
                return failed_with_error(ctx, answer["error"], f"统计算子（{labels[key]}）", f"counting ops ({labels[key]})",
                                         max_seq_len=max_len)
        first, second = answers
        # ... unless the second replays a result remembered from the first (other values here): the first is counted
        return second["ops"] if same_values(first.get("out"), second.get("out")) else max(first["ops"], second["ops"])

    def count_decoding(sizes: dict) -> int | Outcome:
        # the same sizes through a cache: the prompt at start_pos 0, then one token after it (red team on the second
        # lab: a loop over heads run only when a cache is given kept this point)
        key = tuple(sizes.values())
        B, H_kv, T = key
        n_heads = H_kv * n_rep
        args = {"dim": n_heads * head_dim, "n_heads": n_heads, "n_kv_heads": H_kv, "max_seq_len": max_len + 1,
                "max_batch_size": B}
        steps = [[0, 0, T], [0, T, 1]]
        weights, whole = decoding_inputs(ctx, args, B, steps, seeds[key] + 1000)
        answer = ctx.student.call(Probe.DECODE, decode_request(args, steps, whole, weights, count_ops=True))
        error = first_failure(answer, len(steps), UNANSWERED)
        if error:
            return failed_with_error(ctx, error, f"用缓存解码时统计算子（{labels[key]}）",
                                     f"counting ops while decoding with a cache ({labels[key]})", max_seq_len=max_len + 1)
        return sum(step["ops"] for step in answer["steps"])

    def label(sizes: dict) -> str:
        return labels[tuple(sizes.values())]

    whole_pass = counted_loops(stages, count, label)
    if not whole_pass.passed:
        return whole_pass
    cached = counted_loops(stages, count_decoding, label)
    if cached.passed:
        cached.zh, cached.en = f"{whole_pass.zh}{CACHED_ZH}{cached.zh}", f"{whole_pass.en} {CACHED_EN}{cached.en}"
    elif not cached.cause:  # the count's own verdict, not a failed probe's: say which pass it counted
        cached.zh, cached.en = f"{CACHED_ZH}{cached.zh}", f"{CACHED_EN}{cached.en}"
    return cached


UNANSWERED = "the worker answered fewer steps than it was asked"
CACHED_ZH, CACHED_EN = "用 KV 缓存解码时（提示词后接一个 token）：", "Decoding with a KV cache (a prompt, then one token): "


register_gates("gqa", "不调用内置注意力（F.scaled_dot_product_attention）",
               "no built-in attention (F.scaled_dot_product_attention)")
