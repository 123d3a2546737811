"""Part 3, GroupedQueryAttention with a KV cache, decoding: a prompt then single tokens, a prompt then a chunk, two
sequences interleaved on one module, and (for `gqa.decode`) a prompt, a token and a chunk with as many key/value heads
as query heads, each step's output held to the full causal pass (`gqa.decode`), and no step's row moved by a later
position of that step (`gqa.causal`).

The cache is the grader's own (grader/sandbox/decode_probes.py), so only the module's handling of it is judged here.
The sizes, the prompt and chunk lengths and every value are drawn per grading; the worker traces on decoys and the
judge chains the steps' graphs on these (grader/graph/decode_chain.py).
"""
from __future__ import annotations

import math

import torch

from grader.checks import Context, Outcome, check, diagnosis, failed, passed
from grader.checks.common import MODULE_TOLERANCE, failed_with_error, where_largest
from grader.checks.gqa.probing import named_kv_heads_crash
from grader.exercises.kv_cache import PROJECTIONS, reference
from grader.sandbox.requests import DecodeRequest, Probe

SCENARIOS = (("提示词后接单个 token，再从前一个位置重新生成一个", "提示词后接一段 token", "两个序列在同一个模块上交替",
              "n_kv_heads == n_heads（普通多头注意力）：提示词、一个 token、一段 token"),
             ("a prompt then single tokens, the last but one generated again", "a prompt then a chunk",
              "two sequences interleaved on one module",
              "n_kv_heads == n_heads (plain multi-head attention): a prompt, a token, a chunk"))


def drawn(ctx: Context) -> tuple[dict, int, list[list[list[int]]]]:
    """The model's sizes, the batch (B < max_batch_size, so a read of every cache row shows) and each scenario's
    steps [sequence, start_pos, T]: a prompt then three single tokens and the second of them again (start_pos back
    by one, as a sampler that rejects a token does: a module that counts positions itself instead of reading start_pos
    kept every point while each sequence only went forward, red team on the second lab); a prompt then a chunk, a
    chunk to the last position but one and a token there; two prompts on one module, a token of each, then a chunk of
    the first."""
    kv_heads, n_rep, d, max_batch, extra = ctx.sizes("gqa.decode", range(1, 4), range(2, 4), range(3, 9), range(3, 5),
                                                     range(0, 8))
    prompt, other, chunk, batch = ctx.sizes("gqa.decode steps", range(3, 7), range(3, 7), range(2, 5), range(1, max_batch))
    # a second chunk as long as the cache leaves (15 to 32 tokens), then a token at its last position: code that takes
    # another path past the first chunk's sizes, or late in the cache, meets it (red team on the second lab: the offset
    # mask left out for chunks of more than 4 tokens kept every point, then for chunks of 13 or more while the longest
    # drawn was 12)
    long, = ctx.sizes("gqa.decode long chunk", range(13, 21))
    args = {"dim": kv_heads * n_rep * d, "n_heads": kv_heads * n_rep, "n_kv_heads": kv_heads,
            "max_seq_len": prompt + other + chunk + long + extra, "max_batch_size": max_batch}
    rest = args["max_seq_len"] - prompt - chunk - 1
    scenarios = [[[0, 0, prompt], [0, prompt, 1], [0, prompt + 1, 1], [0, prompt + 2, 1], [0, prompt + 1, 1]],
                 [[0, 0, prompt], [0, prompt, chunk], [0, prompt + chunk, rest], [0, prompt + chunk + rest, 1]],
                 [[0, 0, prompt], [1, 0, other], [0, prompt, 1], [1, other, 1], [0, prompt + 1, chunk]]]
    return args, batch, scenarios


def with_every_scenario(ctx: Context) -> tuple[int, list[tuple[dict, list[list[int]]]]]:
    """The batch and each scenario of `gqa.decode` with its model's sizes: the three of `drawn`, then one with as many
    key/value heads as query heads (n_rep 1, which the drawn sizes never have): a path taken only where no head is
    repeated (the cache left out there) met no decoding before (red team on the second lab)."""
    args, batch, scenarios = drawn(ctx)
    prompt, chunk = scenarios[0][0][2], scenarios[1][1][2]
    plain = {**args, "n_kv_heads": args["n_heads"]}
    ungrouped = [[0, 0, prompt], [0, prompt, 1], [0, prompt + 1, chunk]]
    return batch, [*((args, steps) for steps in scenarios), (plain, ungrouped)]


def inputs(ctx: Context, args: dict, batch: int, steps: list, seed: int) -> tuple[dict, dict[int, torch.Tensor]]:
    """The parent's weights (each (out, in), scaled by 1/√dim) and one whole input per sequence, never sent."""
    generator = ctx.generator(seed)
    dim, d = args["dim"], args["dim"] // args["n_heads"]
    outs = {"wq": args["n_heads"] * d, "wk": args["n_kv_heads"] * d, "wv": args["n_kv_heads"] * d, "wo": dim}
    ins = {"wq": dim, "wk": dim, "wv": dim, "wo": args["n_heads"] * d}
    weights = {name: torch.randn(outs[name], ins[name], generator=generator) / math.sqrt(dim) for name in PROJECTIONS}
    lengths: dict[int, int] = {}
    for sequence, start_pos, length in steps:  # a step may go back (a position decoded again): the furthest one
        lengths[sequence] = max(lengths.get(sequence, 0), start_pos + length)
    return weights, {n: torch.randn(batch, length, dim, generator=generator) for n, length in sorted(lengths.items())}


def request(args: dict, steps: list, whole: dict, weights: dict, **options) -> DecodeRequest:
    xs = [whole[sequence][:, start_pos:start_pos + length].contiguous() for sequence, start_pos, length in steps]
    return DecodeRequest(args=args, steps=steps, xs=xs, weights=weights, **options)


def expected_rows(args: dict, steps: list, whole: dict, weights: dict, **mistake) -> list[torch.Tensor]:
    """Each step's rows of the float64 reference: the full causal pass over its sequence; with a `mistake` (flags of
    `reference.gqa_forward`: offset_mask=False for `cache-mask-offset`, ...), the steps decoded with that mistake at
    every step, step by step with caches (which hold the same keys and values either way)."""
    H, H_kv = args["n_heads"], args["n_kv_heads"]
    if not mistake:
        full = {n: reference.gqa_forward(x, weights, H, H_kv).y for n, x in whole.items()}
        return [full[sequence][:, start_pos:start_pos + length] for sequence, start_pos, length in steps]
    shape = (args["max_batch_size"], H_kv, args["max_seq_len"], args["dim"] // H)
    caches = {n: (torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)) for n in whole}
    rows = []
    for sequence, start_pos, length in steps:
        x = whole[sequence][:, start_pos:start_pos + length]
        y, *cache = reference.gqa_forward(x, weights, H, H_kv, *caches[sequence], start_pos, **mistake)
        caches[sequence] = tuple(cache)
        rows.append(y)
    return rows


STEP_MISTAKES = (({"offset_mask": False}, "cache-mask-offset"), ({"sees_itself": False}, "mask-diagonal"),
                 ({"scale_by": "one"}, "missing-scale"), ({"scale_by": "dim"}, "wrong-scale"),
                 ({"scale_by": "kv_dim"}, "wrong-scale"))
"""What a decoded step can show, each the reference with that mistake at every step: the mask not offset by
start_pos, then mistakes of the module's own attention taken only on the cached path (Part 3 decodes through the
grader's cache, so `cache-position`, whose fix points at KVCache, named those wrongly: independently written bugs of
the second lab). Computed only for a step found wrong."""


def _goes_back(steps: list, index: int) -> bool:
    """Whether step `index` starts before where its sequence's earlier steps had got to (a position decoded again)."""
    sequence, start_pos, _ = steps[index]
    return start_pos < max((s + t for n, s, t in steps[:index] if n == sequence), default=0)


def step_words(index: int, step: list) -> tuple[str, str]:
    sequence, start_pos, length = step
    return (f"第 {index + 1} 步（序列 {sequence}，start_pos={start_pos}，T={length}）",
            f"step {index + 1} (sequence {sequence}, start_pos={start_pos}, T={length})")


def _first_wrong_row(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float) -> int:
    for row in range(expected.size(1)):
        if not diagnosis.close(actual[:, row], expected[:, row], atol, rtol):
            return row
    return 0


def _cache_mistake(steps: list, index: int, actual, right: list[list], tolerance, at_the_step=None) -> list[str]:
    """The id a wrong (or failing) step after its scenario's first shows: a mistake of `STEP_MISTAKES` where the step
    is what it gives (`at_the_step(flags)`: the step's rows with it), the mask not offset by start_pos first; that
    mask too where a chunk after a prompt is the first step wrong while a single token after a prompt was right in
    this grading; the module's handling of start_pos and the cache elsewhere. The first step, a plain prompt on a
    fresh module, is the whole pass's (the other checks of the part say what is wrong there)."""
    _, start_pos, length = steps[index]
    if index == 0:
        return []
    if actual is not None and at_the_step is not None:
        for flags, mistake in STEP_MISTAKES:
            if diagnosis.close(actual, at_the_step(flags), *tolerance):
                return [mistake]
    tokens_right = any(step[1] > 0 and step[2] == 1 for scenario in right for step in scenario)
    if length > 1 and start_pos > 0 and tokens_right:
        return ["cache-mask-offset"]
    return ["cache-position"]


@check("gqa.decode", part="gqa", points=3, visibility="hidden",
       title_zh="用 KV 缓存逐步解码等于完整的因果计算（提示词后接单个 token、一段 token、两个序列交替）",
       title_en="decoding step by step with a KV cache equals the full causal pass (single tokens, a chunk, two "
                "sequences interleaved)")
def decode(ctx: Context) -> Outcome:
    batch, scenarios = with_every_scenario(ctx)
    made = [inputs(ctx, args, batch, steps, 300 + number) for number, (args, steps) in enumerate(scenarios)]
    answers = ctx.student.call_many(Probe.DECODE, [request(args, steps, whole, weights)
                                                   for (args, steps), (weights, whole) in zip(scenarios, made)])
    tolerance = MODULE_TOLERANCE[torch.float32]
    right: list[list] = []  # per scenario, the steps found right so far
    for number, ((args, steps), (weights, whole), answer) in enumerate(zip(scenarios, made, answers)):
        label = (f"（{SCENARIOS[0][number]}）", f" ({SCENARIOS[1][number]})")
        if "error" in answer and not answer.get("steps"):
            return failed_with_error(ctx, answer["error"], f"构建 GroupedQueryAttention 并解码{label[0]}",
                                     f"building GroupedQueryAttention and decoding{label[1]}")
        expected = expected_rows(args, steps, whole, weights)
        right.append([])
        for index, result in enumerate(answer.get("steps", [])):
            zh, en = step_words(index, steps[index])
            if "error" in result:
                outcome = named_kv_heads_crash(ctx, args["n_heads"], args["n_kv_heads"], failed_with_error(
                    ctx, result["error"], f"解码{zh}{label[0]}", f"decoding {en}{label[1]}"))
                extra = _cache_mistake(steps, index, None, right, tolerance)
                if result["error"].get("type") == "WrongReturn":  # decode_probes: forward returned no single tensor
                    extra = ["wrong-return"]
                outcome.mistakes = [*dict.fromkeys([*outcome.mistakes, *extra])]
                return outcome
            actual = result["out"]
            if diagnosis.close(actual, expected[index], *tolerance):
                right[-1].append(steps[index])
                continue
            if tuple(actual.shape) != tuple(expected[index].shape):
                return failed(f"{zh}{label[0]}：输出的形状应为 {tuple(expected[index].shape)}，实际为 {tuple(actual.shape)}。",
                              f"{en}{label[1]}: the output should have shape {tuple(expected[index].shape)}, got "
                              f"{tuple(actual.shape)}.", ["wrong-return"])
            row = _first_wrong_row(actual, expected[index], *tolerance)
            error, where = where_largest(actual, expected[index])
            position = steps[index][1] + row
            before = ("之前的每一步都正确。", " Every earlier step was right.") if index else ("", "")
            if _goes_back(steps, index):
                before = (before[0] + "这一步回到了更早的位置（start_pos 小于这个序列已经写到的位置）：写入和读取都要按 "
                          "start_pos 来，不能按模块自己数的位置。",
                          before[1] + " This step goes back to an earlier position (start_pos below where the "
                          "sequence had got to): writes and reads follow start_pos, never a count the module keeps.")
            return failed(f"{zh}{label[0]}：输出第 {row} 行（绝对位置 {position}）与对整个序列做一次完整因果计算的结果不符，"
                          f"最大误差 {error:.3g}（位置 {where}）。{before[0]}",
                          f"{en}{label[1]}: output row {row} (absolute position {position}) differs from the full "
                          f"causal pass over the whole sequence; max error {error:.3g} at {where}.{before[1]}",
                          _cache_mistake(steps, index, actual, right, tolerance,
                                         lambda flags: expected_rows(args, steps, whole, weights, **flags)[index]))
    return passed("逐步解码的每一步都等于完整的因果计算（提示词后接单个 token、从前一个位置重新生成的 token、一段 token，"
                  "两个序列在同一个模块上交替，n_kv_heads == n_heads）。",
                  "Every decoding step equals the full causal pass (single tokens, one generated again from an "
                  "earlier position, and a chunk after a prompt; two sequences interleaved on one module; "
                  "n_kv_heads == n_heads).")


def moved(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per row (position), whether any value differs between two runs (NaN where NaN counts as equal)."""
    differs = (a != b) & ~(torch.isnan(a) & torch.isnan(b))  # (B, rows, dim)
    return differs.any(-1).any(0)


@check("gqa.causal", part="gqa", points=1, visibility="hidden",
       title_zh="每一步都严格因果（第 i 行不随本步之后位置的输入而变）",
       title_en="strictly causal at every step (row i does not move with a later position's input in that step)")
def causal(ctx: Context) -> Outcome:
    args, batch, scenarios = drawn(ctx)
    for number, steps in enumerate(scenarios):
        weights, whole = inputs(ctx, args, batch, steps, 300 + number)
        label = (f"（{SCENARIOS[0][number]}）", f" ({SCENARIOS[1][number]})")
        base = request(args, steps, whole, weights)
        perturbed = []  # (step, j): positions j.. of that step's x drawn anew, the rows before j must stay
        for index, (sequence, start_pos, length) in enumerate(steps):
            for j in range(1, length):
                other = {n: x.clone() for n, x in whole.items()}
                fresh = torch.randn(batch, length - j, args["dim"], generator=ctx.generator(400 + 10 * number + index))
                other[sequence][:, start_pos + j:start_pos + length] = fresh
                perturbed.append((index, j, request(args, steps, other, weights)))
        answers = ctx.student.call_many(Probe.DECODE, [base, *(r for _, _, r in perturbed)])
        first = answers[0]
        if "error" in first and not first.get("steps"):
            return failed_with_error(ctx, first["error"], f"构建 GroupedQueryAttention 并解码{label[0]}",
                                     f"building GroupedQueryAttention and decoding{label[1]}")
        ran = first.get("steps", [])
        broken = [index for index, result in enumerate(ran) if "out" not in result]
        if broken or len(ran) < len(steps):  # a step that never ran shows no causality
            at = broken[0] if broken else len(ran)
            zh, en = step_words(at, steps[at])
            return Outcome(False, f"未检查：解码{zh}{label[0]}时出错（见 gqa.decode）。",
                           f"Not checked: decoding {en}{label[1]} failed (see gqa.decode).", cause="cascade")
        for (index, j, _), answer in zip(perturbed, answers[1:]):
            again = answer.get("steps", [])
            if len(again) <= index or "out" not in again[index]:  # ran on the first inputs, not on these
                zh, en = step_words(index, steps[index])
                return failed(f"{zh}{label[0]}：只改变本步第 {j} 行起的输入，解码就出错了，无法说明前面的行不受影响。",
                              f"{en}{label[1]}: changing this step's input from row {j} on made decoding fail, so "
                              f"the rows before it are not shown to stay as they were.")
            if ran[index]["out"].dim() != 3 or again[index]["out"].shape != ran[index]["out"].shape:
                continue  # another shape than (B, T, dim): gqa.decode says so
            rows = moved(ran[index]["out"][:, :j], again[index]["out"][:, :j])
            if bool(rows.any()):
                row = int(rows.nonzero()[0])
                zh, en = step_words(index, steps[index])
                sequence, start_pos, _ = steps[index]
                named = ["cache-mask-offset"] if start_pos > 0 else []
                return failed(f"{zh}{label[0]}：只改变本步第 {j} 行起的输入，输出第 {row} 行（绝对位置 {start_pos + row}）就变了："
                              f"它看到了自己之后的位置，被遮住的权重不是精确的 0。",
                              f"{en}{label[1]}: changing this step's input from row {j} on moved output row {row} "
                              f"(absolute position {start_pos + row}): it sees positions after its own; masked weights "
                              f"are not exactly 0.", named)
    return passed("每一步（提示词、单个 token、一段 token，两个序列交替）的每一行都不随本步之后位置的输入而变。",
                  "At every step (prompts, single tokens, chunks, two sequences interleaved) no row moves with the "
                  "input of a later position in that step.")
