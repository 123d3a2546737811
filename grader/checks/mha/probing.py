"""Part 2's probes as the checks use them: arguments, weights and inputs, one module run with its
structural checks, the comparison with the float64 reference, and the shape probe other checks
draw a configuration from."""
from __future__ import annotations

import math

import torch

from grader.checks import diagnosis, reference, scale_factor
from grader.exercises.attention import PROJECTIONS
from grader.checks import Context, Outcome, failed
from grader.graph import structure
from grader.checks.common import (MODULE_TOLERANCE, failed_with_error, named_variant, nan_from_an_infinity, non_finite,
                                  resource_failure,
                                  unidentified, where_largest)
from grader.checks.regimes import regimes
from grader.sandbox.requests import MhaRequest, Probe

# (B, T, dim, n_heads, max_seq_len): T = 1, T = max_seq_len, B = 1 (with T = 1 and with
# T = max_seq_len), a width that is not a power of two, more heads than positions.
CONFIGS = [(2, 5, 32, 4, 16), (1, 1, 32, 4, 16), (2, 16, 32, 4, 16), (2, 7, 24, 3, 12), (3, 3, 64, 8, 8),
           (1, 12, 24, 3, 12)]


def model_args(dim=32, n_heads=4, max_seq_len=16, dropout=0.0) -> dict:
    return dict(dim=dim, n_heads=n_heads, dropout=dropout, max_seq_len=max_seq_len)


def linear_weights(ctx: Context, dim: int, seed: int) -> dict:
    g = ctx.generator(seed)
    return {name: torch.randn(dim, dim, generator=g) / math.sqrt(dim) for name in PROJECTIONS}


def in_regimes(ctx: Context, label: str, calls: list[dict]) -> list[dict]:
    """The calls, each in a regime, the two taking turns from a start drawn per grading (checks.regimes)."""
    return [dict(call, regime=regime) for call, regime in zip(calls, regimes(ctx, label, [None] * len(calls)))]


def inputs(ctx: Context, B: int, T: int, dim: int, seed: int, self_attention: bool = False, dtype=torch.float32):
    g = ctx.generator(seed)
    q = torch.randn(B, T, dim, generator=g).to(dtype)
    if self_attention:
        return {"q": q, "k": q, "v": q}
    return {"q": q, "k": torch.randn(B, T, dim, generator=g).to(dtype), "v": torch.randn(B, T, dim, generator=g).to(dtype)}


def out_tensor(result: dict) -> torch.Tensor | None:
    out = result.get("out", {})
    return out.get("value") if out.get("kind") == "tensor" else None


def run(ctx: Context, args: dict, calls: list[dict], is_causal, doing: tuple[str, str], **options) -> tuple[list, Outcome | None]:
    """Build the module and run the calls; the first error, wrong type or wrong shape fails."""
    answer = ctx.student.call(Probe.MHA, MhaRequest(args=args, is_causal=is_causal, calls=calls, **options))
    return checked_calls(ctx, args, calls, answer, doing)


def first_error(answer: dict) -> dict | None:
    """The error of building the module, else of its first failing call."""
    return answer.get("error") or next((r["error"] for r in answer.get("calls", []) if "error" in r), None)


def checked_calls(ctx: Context, args: dict, calls: list[dict], answer: dict,
                  doing: tuple[str, str]) -> tuple[list, Outcome | None]:
    """An mha probe's answer: its per-call results, or the first error, wrong type or wrong shape."""
    if "error" in answer:
        return [], failed_with_error(ctx, answer["error"], "构造 MultiHeadAttention", "building MultiHeadAttention",
                                     max_seq_len=args["max_seq_len"])
    for call, result in zip(calls, answer["calls"]):
        if "error" in result:
            return [], failed_with_error(ctx, result["error"], doing[0], doing[1], max_seq_len=args["max_seq_len"])
        out = result.get("out", {})
        expected = tuple(call["q"].shape)
        if out.get("kind") != "tensor":
            return [], failed(f"forward 应返回一个张量，实际返回了 {out.get('kind')}。",
                              f"forward should return one tensor, got {out.get('kind')}.", ["wrong-return"])
        if tuple(out["shape"]) != expected:
            return [], failed(f"输出形状应为 {expected}，实际为 {tuple(out['shape'])}。",
                              f"The output should have shape {expected}, got {tuple(out['shape'])}.", ["wrong-return"])
    return answer["calls"], None


def probe_shapes(ctx: Context) -> list[tuple[tuple, Outcome | None, bool]]:
    """Every promised configuration, causal and not: (config, its first problem or None, whether it
    returned the right shape). Run once per grading: mha.shapes judges it, the device probe takes a
    configuration from it."""
    if "mha" not in ctx.probed:
        results = []
        # each configuration's two calls in the two regimes, the first drawn per grading (checks.regimes)
        chosen = iter(regimes(ctx, "mha.shapes", [None] * 2 * len(CONFIGS)))
        for seed, (B, T, dim, heads, max_len) in enumerate(CONFIGS, start=100):
            problem, ran = None, True
            for is_causal in (True, False):
                call = dict(inputs(ctx, B, T, dim, seed), regime=next(chosen))
                outputs, problem = run(ctx, model_args(dim, heads, max_len), [call], is_causal,
                                       (f"运行 forward（B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal}）",
                                        f"running forward (B={B}, T={T}, dim={dim}, n_heads={heads}, is_causal={is_causal})"))
                ran = ran and not problem
                if not problem and not torch.isfinite(out_tensor(outputs[0])).all():  # which mistake: mha.values names it
                    problem = failed(f"T={T}, is_causal={is_causal}：输出含 NaN 或 inf。",
                                     f"T={T}, is_causal={is_causal}: the output has NaN or inf.")
                if problem:
                    break
            results.append(((B, T, dim, heads, max_len), problem, ran))
            if problem and resource_failure(problem):  # no other configuration will do better
                break
        ctx.probed["mha"] = results
    return ctx.probed["mha"]


def accepted_config(ctx: Context) -> tuple | None:
    """A promised configuration the module runs on with the right output shape (values aside), or None."""
    return next((config for config, _, ran in probe_shapes(ctx) if ran), None)


def diagnose_numbers(actual: torch.Tensor, call: dict, weights: dict, n_heads: int, is_causal: bool, static: dict) -> list[str]:
    shared: dict = {}  # the steps the variants have in common, computed once (reference.multi_head_attention)

    def computed(variant):
        return reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal, variant,
                                              memo=shared)

    if nan_from_an_infinity(static, actual):
        return ["mask-nan"]
    variants = {variant: computed(variant) for variant in reference.variants_for(reference.MHA_VARIANTS, is_causal)}
    found = diagnosis.matching_variant(actual, variants)
    if found is None and actual is not None:  # several bugs at once: a pair or triple, each changing another step
        found = diagnosis.matching_combination(actual, computed, reference.combinations(list(variants)))
    return named_variant(found, static)


READ_FROM_THE_GRAPH = ("没有哪种已知错误的数值能重现这些结果，但代码的计算图与参考实现的不同之处指出了这些错误："
                       "{ids}（见下方各条说明）。",
                       "No catalogued mistake's numbers reproduce these, but where the code's graph differs from the "
                       "reference's names them: {ids} (each explained below).")


def structural_ids(result: dict) -> list[str]:
    """The ids the judge read from a call's graph (grader/graph/structure.py), only those it can name."""
    found = result.get("structural")
    return [i for i in found if i in structure.FOUND] if isinstance(found, list) else []


def compare(actual, call, weights, n_heads, is_causal, static, label: tuple[str, str],
            structural: list[str] = ()) -> Outcome | None:
    """None where the output matches the reference; else the failure, its mistakes named from the numbers, or, where
    none reproduces them, from the `structural` ids the call's graph showed."""
    expected = reference.multi_head_attention(call["q"], call["k"], call["v"], weights, n_heads, is_causal)
    atol, rtol = MODULE_TOLERANCE[call["q"].dtype]
    if diagnosis.close(actual, expected, atol, rtol):
        return None
    error, index = where_largest(actual, expected)
    scale = scale_factor.finding(scale_factor.factor_of_module(actual, call, weights, n_heads, is_causal),
                                 scale_factor.sizes_of_module(call["q"].size(-2), call["q"].size(-1), n_heads))
    mistakes = diagnose_numbers(actual, call, weights, n_heads, is_causal, static)
    zh, en = (f"{label[0]}：输出与参考实现不符，最大误差 {error:.3g}（位置 {index}，容差 atol={atol:g}）。",
              f"{label[1]}: the output differs from the reference, max error {error:.3g} at {index} (atol={atol:g}).")
    if not mistakes and structural and actual is not None and bool(torch.isfinite(actual).all()):
        mistakes = list(structural)
        zh, en = zh + READ_FROM_THE_GRAPH[0].format(ids="、".join(mistakes)), \
            f"{en} {READ_FROM_THE_GRAPH[1].format(ids=', '.join(mistakes))}"
    outcome = scale_factor.named(failed(zh, en, mistakes), scale)
    outcome = unidentified(non_finite(outcome, actual, expected))
    outcome.cause = "values"
    return outcome
