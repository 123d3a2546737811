"""Part 3's probes as the checks use them: arguments, reference weights and inputs drawn per grading, one whole-prompt
pass of the module with its structural checks (the projections' shapes, the output's), and the shape probe the
device and loop checks take a configuration from."""
from __future__ import annotations

import dataclasses
import math
import re

import torch

from grader.checks import Context, Outcome, failed
from grader.checks.common import failed_with_error, resource_failure
from grader.checks.regimes import regimes
from grader.sandbox.requests import GqaRequest, Probe, gqa_weight_shapes

# (B, T, dim, n_heads, n_kv_heads, max_seq_len, max_batch_size): one key/value head, a few (2 or 3 < n_heads) and as
# many as the queries; B = 1 and B = max_batch_size > 1; T = 1 and T = max_seq_len; widths that are not powers of two
CONFIGS = [(2, 5, 32, 4, 2, 16, 4), (1, 1, 32, 4, 1, 16, 2), (2, 7, 48, 4, 4, 12, 2), (4, 16, 24, 6, 3, 16, 4),
           (1, 33, 40, 8, 1, 64, 1), (3, 3, 36, 6, 2, 8, 3)]
RESHAPED = re.compile(r"is invalid for input of size|size of tensor a|cannot be multiplied|shape mismatch", re.I)
"""What a split into n_heads key/value heads of a projection sized for n_kv_heads raises."""


def model_args(B: int, T: int, dim: int, n_heads: int, n_kv_heads: int, max_seq_len: int, max_batch_size: int) -> dict:
    return dict(dim=dim, n_heads=n_heads, n_kv_heads=n_kv_heads, max_seq_len=max_seq_len, max_batch_size=max_batch_size)


def linear_weights(ctx: Context, args: dict, seed: int) -> dict:
    """The projections, sized as the interface promises, scaled so that each keeps its input's magnitude."""
    g = ctx.generator(seed)
    return {name: torch.randn(shape, generator=g) / math.sqrt(shape[1])
            for name, shape in gqa_weight_shapes(args).items()}


def prompt(ctx: Context, B: int, T: int, dim: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(B, T, dim, generator=ctx.generator(seed)).to(dtype)


def out_tensor(answer: dict) -> torch.Tensor | None:
    out = answer.get("out", {})
    return out.get("value") if out.get("kind") == "tensor" else None


def labelled(config: tuple) -> str:
    B, T, dim, n_heads, n_kv_heads, _, _ = config
    return f"B={B}, T={T}, dim={dim}, n_heads={n_heads}, n_kv_heads={n_kv_heads}"


def request(args: dict, x: torch.Tensor, weights: dict, **options) -> GqaRequest:
    return GqaRequest(args=args, x=x, weights=weights, **options)


def checked(ctx: Context, args: dict, x: torch.Tensor, answer: dict) -> Outcome | None:
    """The structural problem of one answer: projections not sized as promised (n_kv_heads ignored where wk and wv
    have n_heads heads), an error, or an output that is not one (B, T, dim) tensor; None where there is none."""
    problem = parameters_problem(args, answer.get("parameters") or {})
    if problem:
        return problem
    if "error" in answer:
        return failed_with_error(ctx, answer["error"], "运行 GroupedQueryAttention 的 forward(x)",
                                 "running GroupedQueryAttention's forward(x)", max_seq_len=args["max_seq_len"])
    out = answer.get("out", {})
    if out.get("kind") != "tensor":
        return failed(f"forward 应返回一个张量，实际返回了 {out.get('kind')}。",
                      f"forward should return one tensor, got {out.get('kind')}.", ["wrong-return"])
    if tuple(out["shape"]) != tuple(x.shape):
        return failed(f"输出形状应为 {tuple(x.shape)}，实际为 {tuple(out['shape'])}。",
                      f"The output should have shape {tuple(x.shape)}, got {tuple(out['shape'])}.", ["wrong-return"])
    return None


def parameters_problem(args: dict, found: dict) -> Outcome | None:
    """The projections the module holds against the interface's shapes: wk, wv with n_heads heads where n_kv_heads
    < n_heads is `kv-heads-ignored` (a plain multi-head module)."""
    head_dim = args["dim"] // args["n_heads"]
    for layer, shape in gqa_weight_shapes(args).items():
        held = found.get(layer)
        if held is None or tuple(held) == shape:
            continue  # a module without the layer fails where the weights are loaded, with the error it raises
        ignored = layer in ("wk", "wv") and args["n_kv_heads"] < args["n_heads"] \
            and tuple(held) == (args["n_heads"] * head_dim, args["dim"])
        zh = (f"self.{layer}.weight 的形状应为 {shape}（nn.Linear({shape[1]}, {shape[0]}, bias=False)），实际为 "
              f"{tuple(held)}。")
        en = (f"self.{layer}.weight should have shape {shape} (nn.Linear({shape[1]}, {shape[0]}, bias=False)), got "
              f"{tuple(held)}.")
        if ignored:
            zh += f"它按 n_heads={args['n_heads']} 个头来建，而键和值只有 n_kv_heads={args['n_kv_heads']} 个头。"
            en += (f" It is sized for n_heads={args['n_heads']} heads, where keys and values have "
                   f"n_kv_heads={args['n_kv_heads']}.")
        return failed(zh, en, ["kv-heads-ignored"] if ignored else [])
    return None


def run(ctx: Context, config: tuple, x: torch.Tensor, weights: dict, **options) -> tuple[dict, Outcome | None]:
    """One whole-prompt pass with the structural checks every check relies on."""
    args = model_args(*config)
    answer = ctx.student.call(Probe.GQA, request(args, x, weights, **options))
    return answer, named_kv_heads_crash(ctx, config[3], config[4], checked(ctx, args, x, answer))


def named_kv_heads_crash(ctx: Context, n_heads: int, n_kv_heads: int, problem: Outcome | None) -> Outcome | None:
    """A reshape error no catalog id explains, with fewer key/value heads than queries, where gqa.shapes found the
    module splitting keys and values into n_heads heads: that finding names this crash too."""
    shapes = ctx.outcomes.get("gqa.shapes")
    if problem is None or problem.mistakes or not problem.cause.startswith("error:") \
            or not RESHAPED.search(problem.error) or n_kv_heads >= n_heads \
            or shapes is None or "kv-heads-ignored" not in shapes.mistakes:
        return problem
    return dataclasses.replace(problem, mistakes=["kv-heads-ignored"])


def probe_shapes(ctx: Context) -> list[tuple[tuple, Outcome | None]]:
    """Every promised configuration, each in a regime drawn per grading: (config, its first problem or None). Run once
    per grading: gqa.shapes judges it, the device and loop probes need a configuration the module runs on."""
    if "gqa" not in ctx.probed:
        results = []
        chosen = regimes(ctx, "gqa.shapes", [None] * len(CONFIGS))
        for seed, (config, regime) in enumerate(zip(CONFIGS, chosen), start=300):
            B, T, dim = config[:3]
            args = model_args(*config)
            _, problem = run(ctx, config, prompt(ctx, B, T, dim, seed), linear_weights(ctx, args, seed + 50),
                             regime=regime)
            if problem:
                problem = dataclasses.replace(problem, zh=f"{labelled(config)}：" + problem.zh,
                                              en=f"{labelled(config)}: " + problem.en)
            results.append((config, problem))
            if problem and resource_failure(problem):  # no other configuration will do better, and each costs seconds
                break
        ctx.probed["gqa"] = split_by_n_heads(results)
    return ctx.probed["gqa"]


def split_by_n_heads(results: list[tuple[tuple, Outcome | None]]) -> list[tuple[tuple, Outcome | None]]:
    """A module that runs where n_kv_heads == n_heads and fails where there are fewer key/value heads splits k and v
    into n_heads heads, or never repeats them: `kv-heads-ignored`, named beside the error it raised, with which of the
    two the error shows (`_why_the_heads_disagree`)."""
    as_many = [problem for config, problem in results if config[3] == config[4]]
    if not as_many or any(as_many):
        return results
    named = []
    for config, problem in results:
        if problem and problem.cause.startswith("error:") and RESHAPED.search(problem.error) \
                and "kv-heads-ignored" not in problem.mistakes:
            zh, en = _why_the_heads_disagree(problem.error, n_heads=config[3], n_kv_heads=config[4])
            problem = dataclasses.replace(
                problem, mistakes=[*problem.mistakes, "kv-heads-ignored"],
                zh=problem.zh.rstrip("。.") + "。n_kv_heads 等于 n_heads 时能运行，少于 n_heads 时形状对不上：" + zh,
                en=problem.en.rstrip(".") + ". It runs where n_kv_heads == n_heads and " + en)
        named.append((config, problem))
    return named


BROADCAST = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def _why_the_heads_disagree(error: str, n_heads: int, n_kv_heads: int) -> tuple[str, str]:
    """What the error says happened to the key/value heads: n_kv_heads of them met the n_heads query heads (a
    broadcast between exactly those two counts: `repeat_kv` left out), else a split into n_heads heads."""
    found = BROADCAST.search(error)
    if found and {int(found.group(1)), int(found.group(2))} == {n_heads, n_kv_heads}:
        return ("键和值还只有 n_kv_heads 个头就和 n_heads 个查询头相乘了：没有用 repeat_kv 把它们扩成 n_heads 个头。",
                "fails where there are fewer: keys and values meet the n_heads query heads with their n_kv_heads "
                "heads, `repeat_kv` never brought them to n_heads.")
    return "键和值被按 n_heads 个头来拆了。", ("fails to reshape where there are fewer: keys and values are split into "
                                       "n_heads heads.")


def accepted_config(ctx: Context) -> tuple | None:
    """A promised configuration the module runs on with the right shapes (values aside): one with several key/value
    heads, fewer than the queries, where there is one (a single key/value head broadcasts over the queries without
    `repeat_kv`, so running there says nothing of groups), else one with as many as the queries, or None."""
    ran = [config for config, problem in probe_shapes(ctx) if problem is None]
    return next((config for config in ran if 1 < config[4] < config[3]),
                next((config for config in ran if config[4] == config[3]), ran[0] if ran else None))


def groups_drawn(ctx: Context, label: str, accepted: tuple) -> int:
    """How many query heads share each key/value head in a probe of how the module runs (2 or 3, drawn per grading);
    1 where the module runs only with as many key/value heads as queries: its devices and loops are judged there."""
    return ctx.sizes(label, range(2, 4))[0] if accepted[4] < accepted[3] else 1
