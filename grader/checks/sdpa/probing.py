"""Part 1's probes as the checks use them: inputs, one call with its structural checks, the
comparison with the float64 reference, and the shape probe other checks draw an input from."""
from __future__ import annotations

import dataclasses

import torch

from grader.checks import diagnosis, reference, scale_factor, Context, Outcome, failed
from grader.checks.common import (TOLERANCE, failed_with_error, named_variant, nan_from_an_infinity, non_finite,
                                  resource_failure, unidentified, where_largest)
from grader.checks.regimes import regimes
from grader.sandbox.requests import Probe, SdpaRequest

# (batch dims, T, d_k, d_v): zero to three leading dims (the stub promises any number), T = 1,
# long T, d_k != d_v, heads != positions, a width that is not a power of two.
SHAPES = [((2, 3), 5, 8, 8), ((), 6, 8, 8), ((4,), 1, 4, 4), ((2, 2, 3), 4, 6, 10), ((1, 2), 128, 16, 16),
          ((3,), 7, 12, 5), ((), 1, 4, 6)]
# Which accepted shape the device and loop probes use: (B, H, T, d) first, as the exercise teaches.
LEADING_DIMS_PREFERENCE = {2: 0, 3: 1, 1: 2, 0: 3}


def qkv(ctx: Context, batch, T, d_k, d_v, seed: int, scale: float = 1.0, dtype=torch.float32):
    """Q, K, V with `batch` leading dims, or with the nearest rank the code accepts (accepted_batch)."""
    batch = accepted_batch(ctx, tuple(batch))
    g = ctx.generator(seed)
    Q = (torch.randn(*batch, T, d_k, generator=g) * scale).to(dtype)
    K = (torch.randn(*batch, T, d_k, generator=g) * scale).to(dtype)
    V = torch.randn(*batch, T, d_v, generator=g).to(dtype)
    return Q, K, V


def ranks(ctx: Context) -> tuple[set[int], set[int]]:
    """(numbers of leading dims on which some promised shape fails, those on which every one passes)."""
    results = ctx.probed.get("sdpa", [])
    failing = {len(s[0]) for s, p in results if p}
    return failing, {len(s[0]) for s, _ in results} - failing


def accepted_batch(ctx: Context, batch: tuple) -> tuple:
    """`batch` itself, or, once sdpa.shapes has named `hardcoded-dims`, the same sizes at the nearest
    number of leading dims the code accepts: code written for one rank is then checked at that rank,
    so each bug it has there is named on its own evidence instead of the rank crash standing in."""
    shapes = ctx.outcomes.get("sdpa.shapes")
    failing, clean = ranks(ctx)
    if shapes is None or "hardcoded-dims" not in shapes.mistakes or len(batch) not in failing or not clean:
        return batch
    rank = min(clean, key=lambda r: (abs(r - len(batch)), -r))
    return batch[len(batch) - rank:] if rank <= len(batch) else (1,) * (rank - len(batch)) + batch


def tensor(answer: dict, key: str) -> torch.Tensor | None:
    item = answer.get(key) or {}
    return item.get("value") if item.get("kind") == "tensor" else None


def structure_problem(answer: dict, out_shape, weights_shape) -> Outcome | None:
    """Part 1 must return the tuple (out, weights) with the documented shapes."""
    shape = answer.get("structure", {})
    if shape.get("length") != 2 or shape.get("kind") not in ("tuple", "list"):
        got = shape.get("kind") if shape.get("length") is None else f"{shape.get('kind')} of length {shape.get('length')}"
        return failed(f"应返回二元组 (out, weights)，实际返回了 {got}。",
                      f"Expected the tuple (out, weights), got {got}.", ["wrong-return"])
    for key, expected in (("out", out_shape), ("weights", weights_shape)):
        item = answer.get(key, {})
        if item.get("kind") != "tensor":
            return failed(f"{key} 应是张量，实际是 {item.get('kind')}。", f"{key} should be a tensor, got {item.get('kind')}.",
                          ["wrong-return"])
        if tuple(item["shape"]) != tuple(expected):
            return failed(f"{key} 的形状应为 {tuple(expected)}，实际为 {tuple(item['shape'])}。",
                          f"{key} should have shape {tuple(expected)}, got {tuple(item['shape'])}.", ["wrong-return"])
    return None


def call(ctx: Context, Q, K, V, is_causal=None, **options) -> tuple[dict, Outcome | None]:
    """Run the student's function and apply the structural checks every check relies on."""
    return _checked(ctx, ctx.student.call(Probe.SDPA, SdpaRequest(Q=Q, K=K, V=V, is_causal=is_causal, **options)),
                    Q, V)


def calls(ctx: Context, inputs: list[tuple], is_causal=None, regime: str | None = None) -> list[tuple[dict, Outcome | None]]:
    """`call` on each (Q, K, V) of `inputs`, the graphs run by the judge in one exchange (StudentCode.call_many):
    for a caller that stops at the first problem."""
    requests = [SdpaRequest(Q=Q, K=K, V=V, is_causal=is_causal, regime=regime) for Q, K, V in inputs]
    return [_checked(ctx, answer, Q, V) for answer, (Q, _, V) in zip(ctx.student.call_many(Probe.SDPA, requests),
                                                                      inputs, strict=True)]


def _checked(ctx: Context, answer: dict, Q, V) -> tuple[dict, Outcome | None]:
    if "error" in answer:
        return answer, name_rank_crash(ctx, failed_with_error(ctx, answer["error"], "调用 scaled_dot_product_attention",
                                                              "calling scaled_dot_product_attention"), Q.dim() - 2)
    T = Q.shape[-2]
    return answer, structure_problem(answer, (*Q.shape[:-1], V.shape[-1]), (*Q.shape[:-2], T, T))


def name_rank_crash(ctx: Context, problem: Outcome | None, leading: int) -> Outcome | None:
    """A crash no catalog id explains, on inputs with as many leading dims as sdpa.shapes found the
    code assumes wrongly: that finding names it here too."""
    shapes = ctx.outcomes.get("sdpa.shapes")
    if problem and not problem.mistakes and shapes and "hardcoded-dims" in shapes.mistakes \
            and any(p and len(s[0]) == leading for s, p in ctx.probed.get("sdpa", [])):
        problem.mistakes = ["hardcoded-dims"]
    return problem


def shape_inputs(ctx: Context, shape: tuple):
    """Q, K, V for one of SHAPES, the same each time it is asked for (its seed is its place in SHAPES)."""
    return qkv(ctx, *shape, SHAPES.index(shape))


def probe_shapes(ctx: Context) -> list[tuple[tuple, Outcome | None]]:
    """Every promised shape with the default flag and is_causal=False: (shape, its first problem or
    None). Run once per grading: sdpa.shapes judges it, the device and loop probes take an input from it."""
    if "sdpa" not in ctx.probed:
        results = []
        # each shape's two calls in the two regimes, the first drawn per grading (checks.regimes)
        chosen = iter(regimes(ctx, "sdpa.shapes", [None] * 2 * len(SHAPES)))
        for shape in SHAPES:
            Q, K, V = shape_inputs(ctx, shape)
            problem = None
            for is_causal, regime in zip((None, False), (next(chosen), next(chosen))):
                _, problem = call(ctx, Q, K, V, is_causal, regime=regime)
                if problem:
                    problem = dataclasses.replace(problem, zh=f"输入 Q{tuple(Q.shape)}、V{tuple(V.shape)}：" + problem.zh,
                                                  en=f"Inputs Q{tuple(Q.shape)}, V{tuple(V.shape)}: " + problem.en)
                    break
            results.append((shape, problem))
            if problem and resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
        ctx.probed["sdpa"] = results
    return ctx.probed["sdpa"]


def accepted_shape(ctx: Context) -> tuple | None:
    """A promised shape the code runs on with the right output shapes (its values aside), or None."""
    accepted = [shape for shape, problem in probe_shapes(ctx) if problem is None]
    return min(accepted, key=lambda s: (LEADING_DIMS_PREFERENCE[len(s[0])], s[1] == 1, s[1]), default=None)


def diagnose_numbers(ctx: Context, answer: dict, Q, K, V, is_causal: bool) -> list[str]:
    """Which catalogued mistake reproduces the student's weights (or output); failing that, what the
    same inputs show at the other numbers of leading dims (rank_evidence)."""
    if nan_from_an_infinity(ctx.static, tensor(answer, "weights"), tensor(answer, "out")):
        return ["mask-nan"]
    found = matching_variant(answer, Q, K, V, is_causal)
    return named_variant(found, ctx.static) if found else rank_evidence(ctx, Q, K, V, is_causal)


def matching_variant(answer: dict, Q, K, V, is_causal: bool) -> str | tuple[str, ...] | None:
    weights, out = tensor(answer, "weights"), tensor(answer, "out")
    variants_w, variants_o = {}, {}
    _, right_weights = reference.attention(Q, K, V, is_causal)
    for variant in reference.variants_for(reference.SDPA_VARIANTS, is_causal):
        variants_o[variant], variants_w[variant] = reference.attention(Q, K, V, is_causal, variant)
    # a variant that changes only the output (weights @ K) has the right weights: right weights must not name it
    variants_w = {v: w for v, w in variants_w.items() if not diagnosis.close(w, right_weights, 1e-9, 1e-9)}
    found = diagnosis.matching_variant(weights, variants_w) if weights is not None else None
    found = found or (diagnosis.matching_variant(out, variants_o) if out is not None else None)
    if found or out is None:
        return found
    # several bugs at once: a pair or a triple of variants, each changing another step, that reproduces the output
    return diagnosis.matching_combination(out, lambda combination: reference.attention(Q, K, V, is_causal, combination)[0],
                                          reference.combinations(list(variants_o)))


def at_rank(x: torch.Tensor, leading: int) -> torch.Tensor:
    """x's (T, d) matrices with `leading` leading dims: the first matrix alone for 0, all of them stacked for more."""
    stacked = x.reshape(-1, *x.shape[-2:])  # (n, T, d)
    return stacked[0] if leading == 0 else stacked.reshape((1,) * (leading - 1) + tuple(stacked.shape))


def rank_evidence(ctx: Context, Q, K, V, is_causal: bool) -> list[str]:
    """Numbers no variant reproduces, run again at each other number of leading dims: right at one of
    them is `hardcoded-dims` (softmax(dim=1) written for 3-D input gives other numbers on 4-D input);
    a variant reproducing them at one is that variant's mistake; else nothing is named (never a guess
    from the text alone)."""
    found = []
    for leading in sorted(set(LEADING_DIMS_PREFERENCE) - {Q.dim() - 2}):
        q, k, v = (at_rank(x, leading) for x in (Q, K, V))
        answer = ctx.student.call(Probe.SDPA, SdpaRequest(Q=q, K=k, V=v, is_causal=is_causal))
        if "error" in answer or tensor(answer, "out") is None or tensor(answer, "weights") is None:
            continue
        expected_out, expected_w = reference.attention(q, k, v, is_causal)
        atol, rtol = TOLERANCE[q.dtype]
        if diagnosis.close(tensor(answer, "weights"), expected_w, atol, rtol) \
                and diagnosis.close(tensor(answer, "out"), expected_out, atol, rtol):
            return ["hardcoded-dims"]
        found.append(matching_variant(answer, q, k, v, is_causal))
    return named_variant(next((f for f in found if f), None), ctx.static)


def weights_figure(answer: dict, Q, K, V, is_causal: bool) -> dict | None:
    """The first head's attention matrix, the student's beside the expected one, for feedback."""
    weights = tensor(answer, "weights")
    if weights is None or weights.dim() < 2:
        return None
    first = (0,) * (weights.dim() - 2)
    _, expected = reference.attention(Q, K, V, is_causal)
    return {"student": weights[first].double().tolist(), "expected": expected[first].tolist()}


def with_figure(outcome: Outcome, answer: dict, Q, K, V, is_causal: bool) -> Outcome:
    if any(m.startswith("mask") or m in ("softmax-dim", "is-causal-typo") for m in outcome.mistakes):
        outcome.figure = weights_figure(answer, Q, K, V, is_causal)
    return outcome


def constant_scale(ctx: Context, found, Q, V, is_causal: bool):
    """A wrong factor measured again with every size changed (T, d_k, d_v): unchanged, it is a constant, not the
    size it happened to equal."""
    if found is None or found.mistake != "wrong-scale":
        return found
    q, k, v = qkv(ctx, tuple(Q.shape[:-2]), Q.size(-2) + 3, Q.size(-1) + 12, V.size(-1) + 7, 98)
    answer, problem = call(ctx, q, k, v, is_causal)
    factor = None if problem else scale_factor.factor_from_weights(q, k, tensor(answer, "weights"), is_causal)
    return scale_factor.constant(found, factor, scale_factor.sizes_of_attention(q, v))


def compare(ctx: Context, answer: dict, Q, K, V, is_causal: bool, label_zh: str, label_en: str) -> Outcome | None:
    """out and weights against the float64 reference at the input dtype's tolerance."""
    atol, rtol = TOLERANCE[Q.dtype]
    expected_out, expected_w = reference.attention(Q, K, V, is_causal)
    for key, expected in (("weights", expected_w), ("out", expected_out)):
        actual = tensor(answer, key)
        if not diagnosis.close(actual, expected, atol, rtol):
            error, index = where_largest(actual, expected)
            scale = constant_scale(ctx, scale_factor.finding(
                scale_factor.factor_from_weights(Q, K, tensor(answer, "weights"), is_causal),
                scale_factor.sizes_of_attention(Q, V)), Q, V, is_causal)
            outcome = with_figure(unidentified(non_finite(scale_factor.named(failed(
                f"{label_zh}：{key} 与参考实现不符，最大误差 {error:.3g}（位置 {index}，容差 atol={atol:g}, rtol={rtol:g}）。",
                f"{label_en}: {key} {'differ' if key == 'weights' else 'differs'} from the reference, "
                f"max error {error:.3g} at {index} "
                f"(tolerance atol={atol:g}, rtol={rtol:g}).",
                diagnose_numbers(ctx, answer, Q, K, V, is_causal)), scale), actual, expected)), answer, Q, K, V, is_causal)
            outcome.cause = "values"
            return outcome
    return None
