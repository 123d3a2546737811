"""Part 2's probes as the checks use them: a chain of update calls on one KVCache at sizes drawn per grading, its
answer (every value the judge's, on this grading's own k and v), the float64 reference threaded beside it, and the
structural check every check relies on.

A chain: the constructor, then a prompt at position 0, two single tokens, a chunk of several tokens, and a new prompt
from position 0 in the same cache (as a generation loop reuses it), all at one batch size B; once with B below
max_batch_size and once with B equal to it.
"""
from __future__ import annotations

import dataclasses

import torch

from grader.checks import Context, Outcome, failed
from grader.checks.common import failed_with_error, resource_failure
from grader.exercises.kv_cache import EXERCISE, reference
from grader.sandbox.requests import CacheRequest, Probe


@dataclasses.dataclass(frozen=True)
class Plan:
    """One chain's sizes: the constructor's arguments, the batch B of every step, and the steps' (start_pos, T)."""

    max_batch_size: int
    max_seq_len: int
    n_kv_heads: int
    head_dim: int
    batch: int
    dtype: torch.dtype
    steps: tuple[tuple[int, int], ...]
    seed: int

    @property
    def buffer_shape(self) -> tuple[int, int, int, int]:
        return self.max_batch_size, self.n_kv_heads, self.max_seq_len, self.head_dim

    @property
    def dtype_name(self) -> str:
        """The dtype as requests and answers spell it ("float16")."""
        return str(self.dtype).removeprefix("torch.")

    def label(self) -> tuple[str, str]:
        sizes = (self.max_batch_size, self.max_seq_len, self.n_kv_heads, self.head_dim)
        args = f"{EXERCISE.graded_name['cache']}{sizes}, dtype={self.dtype_name}"
        return f"{args}、B={self.batch}", f"{args}, B={self.batch}"


def plans(ctx: Context, label: str) -> list[Plan]:
    """The three chains of `label`, sizes drawn per grading: B below max_batch_size (float32), B equal to it
    (float64), then B below it in a half precision drawn per grading (float16 or bfloat16: a cache that stores what it
    is given in float32 kept every point while only float32 and float64 were probed, red team on the second lab);
    positions reach max_seq_len - 1, so that a read one past what was written still has room."""
    max_batch, heads, width, length, prompt, chunk, again = ctx.sizes(
        label, range(2, 5), range(1, 4), range(2, 13), range(29, 35), range(3, 8), range(2, 5), range(1, 3))
    (back,) = ctx.sizes(f"{label} rewind", range(1, 3))
    # a long chunk and a token after it that ends one short of max_seq_len (the last room a read one past can show), a
    # token generated again from an earlier position (start_pos back within the prompt), then a new prompt at 0: a
    # cache that counts positions itself, whether or not it starts again at 0, writes elsewhere, and one that is right
    # only at the first positions is read past them (red team on the second lab: a counter reset only at start_pos 0
    # kept every point, as did a write wrong from position 16 on, and a read one past from position 28 on)
    end = prompt + 2 + chunk
    long = length - 2 - end
    steps = ((0, prompt), (prompt, 1), (prompt + 1, 1), (prompt + 2, chunk), (end, long), (end + long, 1), (back, 1),
             (0, again))
    (half,) = ctx.sizes(f"{label} half precision", range(2))
    return [Plan(max_batch, length, heads, width, batch, dtype, steps, seed)
            for batch, dtype, seed in ((max_batch - 1, torch.float32, 300), (max_batch, torch.float64, 320),
                                       (max_batch - 1, HALF_PRECISIONS[half], 340))]


HALF_PRECISIONS = (torch.float16, torch.bfloat16)


def new_entries(ctx: Context, plan: Plan) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each step's k and v, (B, n_kv_heads, T, head_dim), drawn per grading: every position holds other values, so a
    key shows where it was written."""
    drawn = []
    for number, (_, length) in enumerate(plan.steps):
        g = ctx.generator(plan.seed + number)
        shape = (plan.batch, plan.n_kv_heads, length, plan.head_dim)
        drawn.append((torch.randn(shape, generator=g).to(plan.dtype), torch.randn(shape, generator=g).to(plan.dtype)))
    return drawn


def request(ctx: Context, plan: Plan, **options) -> CacheRequest:
    steps = [{"start_pos": start, "k": k, "v": v} for (start, _), (k, v) in zip(plan.steps, new_entries(ctx, plan))]
    return CacheRequest(max_batch_size=plan.max_batch_size, max_seq_len=plan.max_seq_len, n_kv_heads=plan.n_kv_heads,
                        head_dim=plan.head_dim, dtype=plan.dtype_name, steps=steps, **options)


def expected_chain(ctx: Context, plan: Plan) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The float64 reference's whole cache_k and cache_v after each step, from zeros."""
    cache_k = cache_v = torch.zeros(plan.buffer_shape, dtype=torch.float64)
    after = []
    for (start, _), (k, v) in zip(plan.steps, new_entries(ctx, plan)):
        cache_k, cache_v = reference.written(cache_k, start, k.double()), reference.written(cache_v, start, v.double())
        after.append((cache_k, cache_v))
    return after


def step_words(plan: Plan, number: int) -> tuple[str, str]:
    start, length = plan.steps[number]
    zh = f"第 {number + 1} 次 update(start_pos={start}, k 有 {length} 个位置)"
    en = f"update #{number + 1} (start_pos={start}, k of {length} position{'s' if length > 1 else ''})"
    return zh, en


def shape_problem(plan: Plan, number: int, name: str, item: dict) -> Outcome | None:
    """What update returned against (B, n_kv_heads, start_pos + T, head_dim): another length along the positions
    alone is a read past (or short of) what was written, `cache-position`."""
    start, length = plan.steps[number]
    expected = (plan.batch, plan.n_kv_heads, start + length, plan.head_dim)
    got = tuple(item.get("shape", ()))
    zh, en = step_words(plan, number)
    dtype = plan.dtype_name
    if got == expected and item.get("dtype") != dtype:  # keys cast on the way out: the next layer meets another dtype
        return failed(f"{zh} 返回的 {name} 是 {item.get('dtype')}，应与缓存一样是 {dtype}：直接返回缓冲区的切片，不要转换 dtype。",
                      f"{en} returned {name} in {item.get('dtype')}, expected the cache's {dtype}: return the buffers' "
                      "own slices, with no cast.", ["cache-dtype"])
    if got == expected:
        return None
    if len(got) == 4 and got[:2] + got[3:] == expected[:2] + expected[3:]:
        return failed(f"{zh} 返回的 {name} 有 {got[2]} 个位置（0…{got[2] - 1}），应为写到此刻的 {start + length} 个"
                      f"（0…{start + length - 1}）：读到了还没写入的位置，或少读了。",
                      f"{en} returned {name} of {got[2]} positions (0…{got[2] - 1}), expected the {start + length} "
                      f"written so far (0…{start + length - 1}): it reads positions never written, or too few.",
                      ["cache-position"])
    if len(got) == 4 and got[1:] == expected[1:] and got[0] == plan.max_batch_size != plan.batch:
        return failed(f"{zh} 返回的 {name} 有缓存的全部 {got[0]} 行，应只返回这次写入的前 B={plan.batch} 行（[:B]）：其余"
                      "行是别的序列或从没写过的 0。",
                      f"{en} returned {name} of all {got[0]} rows of the cache, expected rows [:B] (B={plan.batch}), the "
                      "ones this call wrote: the others belong to other sequences or were never written.",
                      ["cache-position"])
    return failed(f"{zh} 返回的 {name} 形状应为 {expected}，实际为 {got}。",
                  f"{en} returned {name} of shape {got}, expected {expected}.", ["wrong-return"])


def structure_problem(ctx: Context, plan: Plan, answer: dict) -> Outcome | None:
    """The chain's first problem: the constructor failed or made buffers of another shape or dtype, a step raised,
    or update returned other than two tensors of the promised shapes."""
    if "error" in answer:
        return failed_with_error(ctx, answer["error"], "构造 KVCache 并调用 update", "building KVCache and calling update")
    for name, item in zip(("cache_k", "cache_v"), answer.get("buffers", [])):
        expected, dtype = plan.buffer_shape, plan.dtype_name
        if (tuple(item.get("shape", ())), item.get("dtype")) != (expected, dtype):
            only_the_dtype = tuple(item.get("shape", ())) == expected  # dtype=dtype left out of __init__
            return failed(f"KVCache.{name} 应为 {expected}、{dtype} 的张量，实际为 {tuple(item.get('shape', ()))}、"
                          f"{item.get('dtype')}。", f"KVCache.{name} should be a {expected} {dtype} tensor, got "
                          f"{tuple(item.get('shape', ()))} {item.get('dtype')}.",
                          ["cache-dtype" if only_the_dtype else "wrong-return"])
    steps = answer.get("steps", [])
    for number, step in enumerate(steps):
        zh, en = step_words(plan, number)
        if "error" in step:
            return failed_with_error(ctx, step["error"], zh, en)
        if "returned" in step:
            got = step["returned"].get("kind", "none")
            return failed(f"{zh} 应返回 (keys, values) 两个张量，实际返回了 {got}。",
                          f"{en} should return two tensors (keys, values), got {got}.", ["wrong-return"])
        problem = shape_problem(plan, number, "keys", step["keys"]) or shape_problem(plan, number, "values", step["values"])
        if problem:
            return problem
    if len(steps) < len(plan.steps):
        return failed("评分程序没有收到每一步的结果。", "The grader did not get every step's result.")
    return None


def call(ctx: Context, plan: Plan, **options) -> tuple[dict, Outcome | None]:
    """Run the chain and apply the structural check, its problem said with the chain's sizes."""
    answer = ctx.student.call(Probe.CACHE, request(ctx, plan, **options))
    problem = structure_problem(ctx, plan, answer)
    if problem:
        zh, en = plan.label()
        problem = dataclasses.replace(problem, zh=f"{zh}：{problem.zh}", en=f"{en}: {problem.en}")
    return answer, problem


def probe_chains(ctx: Context) -> list[tuple[Plan, dict, Outcome | None]]:
    """Both chains, once per grading: cache.shapes judges their structure, the value and in-place checks read them."""
    if "cache" not in ctx.probed:
        results = []
        for plan in plans(ctx, "cache.chains"):
            answer, problem = call(ctx, plan)
            results.append((plan, answer, problem))
            if problem and resource_failure(problem):  # no other chain will do better, and each try costs seconds
                break
        ctx.probed["cache"] = results
    return ctx.probed["cache"]


def runs_somewhere(ctx: Context) -> bool:
    """Whether some chain ran through, every update returning two tensors (of whatever length: a read past what
    was written is cache.shapes' and cache.update's finding, and says nothing of devices or loops)."""
    return any("error" not in answer and len(answer.get("steps", [])) == len(plan.steps)
               and all("keys" in step for step in answer["steps"]) for plan, answer, _ in probe_chains(ctx))


def value(item: dict | None) -> torch.Tensor | None:
    return item.get("value") if isinstance(item, dict) else None
