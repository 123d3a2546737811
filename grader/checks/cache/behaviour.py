"""Part 2, what KVCache computes: its buffers and the shapes update returns, the keys and values it returns after
every step, and whether its preallocated buffers themselves hold the writes."""
from __future__ import annotations

import torch

from grader.checks import Context, Outcome, check, diagnosis, failed, passed
from grader.checks.cache.probing import Plan, expected_chain, new_entries, probe_chains, step_words, value
from grader.checks.common import TOLERANCE, non_finite, unidentified


@check("cache.shapes", part="cache", points=1, visibility="public",
       title_zh="缓冲区是 (max_batch_size, n_kv_heads, max_seq_len, head_dim) 的零张量，update 返回 (B, n_kv_heads, start_pos + T, head_dim)",
       title_en="zero buffers of (max_batch_size, n_kv_heads, max_seq_len, head_dim); update returns (B, n_kv_heads, start_pos + T, head_dim)")
def shapes(ctx: Context) -> Outcome:
    for plan, answer, problem in probe_chains(ctx):
        if problem:
            return problem
        for name, item in zip(("cache_k", "cache_v"), answer["buffers"]):
            buffer = value(item)
            if buffer is not None and bool((buffer != 0).any()):
                zh, en = plan.label()
                return failed(f"{zh}：刚建好的 KVCache.{name} 有 {int((buffer != 0).sum())} 个元素不是 0，应全为 0。",
                              f"{en}: the new KVCache.{name} holds {int((buffer != 0).sum())} nonzero elements; it "
                              f"should be all zeros.")
    return passed("缓冲区的形状、dtype 都对，且全为 0；每次 update（提示词、单个 token、多个 token、从 0 重新开始，B 小于及等于 "
                  "max_batch_size，float32、float64 和一种半精度）返回的形状都对。",
                  "The buffers have the right shape and dtype and are zeros; every update (a prompt, single tokens, a "
                  "chunk, a new prompt from 0, B below and equal to max_batch_size, in float32, float64 and a half "
                  "precision) returns the promised shapes.")


def _positions(numbers: list[int | None]) -> str:
    return "[" + ", ".join("?" if n is None else str(n) for n in numbers) + "]"


def _landed(buffer: torch.Tensor, new: torch.Tensor) -> list[int | None]:
    """For each new position, the position of rows [:B] of the buffer after the call that holds it exactly."""
    rows = buffer[:new.size(0)]
    return [next((p for p in range(rows.size(2)) if torch.equal(rows[:, :, p], new[:, :, t])), None)
            for t in range(new.size(2))]


def position_problem(plan: Plan, number: int, name: str, got: torch.Tensor, want: torch.Tensor,
                     buffer: torch.Tensor | None, new: torch.Tensor) -> Outcome:
    """A step whose returned keys (or values) differ from the reference: which positions differ, and where this
    call's new entries landed; `cache-position` where they landed elsewhere, or where the buffer holds the right
    entries and the read returned others."""
    start, length = plan.steps[number]
    atol, rtol = TOLERANCE[plan.dtype]
    differing = [p for p in range(want.size(2)) if not diagnosis.close(got[:, :, p], want[:, :, p], atol, rtol)]
    zh, en = step_words(plan, number)
    label_zh, label_en = plan.label()
    wanted = list(range(start, start + length))
    landed = _landed(buffer, new) if buffer is not None else wanted
    zh = f"{label_zh}：{zh} 返回的 {name} 在位置 {_positions(differing)} 与参考不同。"
    en = f"{label_en}: {en} returned {name} that differ from the reference at positions {_positions(differing)}."
    mistakes = []
    if landed != wanted:
        nowhere = None in landed
        zh += (f"这次的 {length} 个新位置应写到 {_positions(wanted)}，实际写到了 {_positions(landed)}"
               f"{'（? 表示在前 B 行里找不到）' if nowhere else ''}。")
        en += (f" This call's new {'entries belong' if length > 1 else 'entry belongs'} at {_positions(wanted)}, "
               f"found at {_positions(landed)}{' (? where rows [:B] hold it nowhere)' if nowhere else ''}.")
        mistakes = ["cache-position"]
    elif buffer is not None and diagnosis.close(buffer[:plan.batch, :, :want.size(2)], want, atol, rtol):
        zh += "缓存里这些位置的内容是对的：返回的不是缓冲区的前 start_pos + T 个位置。"
        en += " The buffer holds the right entries there: what was returned is not its first start_pos + T positions."
        mistakes = ["cache-position"]
    outcome = unidentified(non_finite(failed(zh, en, mistakes), got, want))
    outcome.cause = "values"
    return outcome


@check("cache.update", part="cache", points=2.5, visibility="hidden",
       title_zh="每次 update 之后返回到此刻写入的全部键和值（与 float64 参考一致）",
       title_en="after every update, returns the keys and values written so far (matches a float64 reference)")
def update(ctx: Context) -> Outcome:
    for plan, answer, problem in probe_chains(ctx):
        if problem:
            return problem
        entries = new_entries(ctx, plan)
        for number, (step, expected) in enumerate(zip(answer["steps"], expected_chain(ctx, plan))):
            start, length = plan.steps[number]
            for name, buffer_name, reference, new in (("keys", "cache_k", expected[0], entries[number][0]),
                                                      ("values", "cache_v", expected[1], entries[number][1])):
                got, want = value(step[name]), reference[:plan.batch, :, :start + length]
                if got is None or not diagnosis.close(got, want, *TOLERANCE[plan.dtype]):
                    return position_problem(plan, number, name, got if got is not None else torch.full_like(want, float("nan")),
                                            want, value(step.get(buffer_name)), new)
    return passed("每次 update 之后返回的键和值都与参考一致（提示词、单个 token、多个 token、从 0 重新开始，B 小于及等于 "
                  "max_batch_size）。",
                  "After every update the keys and values returned match the reference (a prompt, single tokens, a "
                  "chunk, a new prompt from 0, B below and equal to max_batch_size).")


@check("cache.in_place", part="cache", points=1, visibility="hidden",
       title_zh="写入预分配的缓冲区本身（原地写入），返回的是缓冲区里的内容",
       title_en="writes into the preallocated buffers themselves (in place), and returns what they hold")
def in_place(ctx: Context) -> Outcome:
    answered = 0
    for plan, answer, _ in probe_chains(ctx):
        for number, step in enumerate(answer.get("steps", [])):
            if "error" in step:
                break
            answered += 1
            zh, en = step_words(plan, number)
            label_zh, label_en = plan.label()
            if not step["in_place"]:
                return failed(f"{label_zh}：{zh} 之后，KVCache.cache_k / cache_v 换成了新的张量，而不是在预分配的缓冲区里原地写入："
                              "每一步都重新分配（torch.cat、clone）既费内存又费时间，持有原缓冲区的代码也看不到写入。"
                              "用切片赋值、copy_ 或 index_copy_ 写进原来的缓冲区。",
                              f"{label_en}: after {en}, KVCache.cache_k / cache_v are new tensors, not the preallocated "
                              "buffers written in place: reallocating at every step (torch.cat, clone) costs memory and "
                              "time, and code holding the buffers never sees the writes. Write into the buffers "
                              "themselves with slice assignment, copy_ or index_copy_.", ["cache-reallocated"])
            for name, buffer_name in (("keys", "cache_k"), ("values", "cache_v")):
                got, buffer = value(step.get(name)), value(step.get(buffer_name))
                if got is None or buffer is None:
                    continue
                held = buffer[:got.size(0), :, :got.size(2)] if got.size(2) <= buffer.size(2) else None
                if held is None or held.shape != got.shape or not torch.equal(held, got):
                    return failed(f"{label_zh}：{zh} 返回的 {name} 不是 KVCache.{buffer_name} 里存着的内容：新的键和值"
                                  f"没有写进缓冲区（或写进去的不是返回的），下一步就读不到它们。",
                                  f"{label_en}: {en} returned {name} that KVCache.{buffer_name} does not hold: the new "
                                  f"entries were not written into the buffer (or not the ones returned), so the next "
                                  f"step cannot read them.")
    if not answered:
        return Outcome(False, "未检查：update 一次也没有正常运行（见 cache.shapes）。",
                       "Not checked: update never ran (see cache.shapes).", cause="cascade")
    return passed("每次 update 都原地写进预分配的缓冲区，返回的正是缓冲区里的内容。",
                  "Every update writes into the preallocated buffers in place and returns what they hold.")
